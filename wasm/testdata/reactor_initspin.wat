;; reactor_initspin: a reactor whose _initialize spins forever, so that
;; taking its snapshot runs until InitFuel is spent or Close stops it.
(module
  (memory (export "memory") 1)
  (func (export "_initialize")
    (loop $again
      (br $again)))
  (func (export "assay_check") (result i32)
    (i32.const 0)))
