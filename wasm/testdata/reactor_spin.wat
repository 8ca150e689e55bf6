;; reactor_spin: a reactor whose assay_check spins forever, (loop (br 0)).
(module
  (memory (export "memory") 1)
  (func (export "assay_check") (result i32)
    (loop $again
      (br $again))
    (i32.const 0)))
