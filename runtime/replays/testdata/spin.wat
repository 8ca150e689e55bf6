;; spin: the cheapest loop there is, (loop (br 0)): one fuel an iteration.
(module
  (memory (export "memory") 1)
  (func (export "_start")
    (loop $again
      (br $again))))
