;; reactor_initspin: a reactor whose _initialize loops forever on dependent
;; 64-bit divisions (as slowspin does), so that taking its snapshot runs
;; for seconds, until InitFuel is spent or Close stops it.
(module
  (memory (export "memory") 1)
  (func (export "_initialize")
    (local $x i64)
    (local.set $x (i64.const -1))
    (loop $again
      (local.set $x (i64.div_u (i64.const -1) (i64.or (local.get $x) (i64.const 3))))
      (local.set $x (i64.div_u (i64.const -1) (i64.or (local.get $x) (i64.const 3))))
      (local.set $x (i64.div_u (i64.const -1) (i64.or (local.get $x) (i64.const 3))))
      (local.set $x (i64.div_u (i64.const -1) (i64.or (local.get $x) (i64.const 3))))
      (br $again)))
  (func (export "assay_check") (result i32)
    (i32.const 0)))
