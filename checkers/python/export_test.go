package python

// CheckSourceWithin is CheckSource with the compile's backstop given, for
// tests on a machine too loaded for the default one.
var CheckSourceWithin = checkSource
