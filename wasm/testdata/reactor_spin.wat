;; reactor_spin: a reactor whose assay_check loops forever on dependent
;; 64-bit divisions (as slowspin does), seconds of wall time on MaxFuel.
(module
  (memory (export "memory") 1)
  (func (export "assay_check") (result i32)
    (local $x i64)
    (local.set $x (i64.const -1))
    (loop $again
      (local.set $x (i64.div_u (i64.const -1) (i64.or (local.get $x) (i64.const 3))))
      (local.set $x (i64.div_u (i64.const -1) (i64.or (local.get $x) (i64.const 3))))
      (local.set $x (i64.div_u (i64.const -1) (i64.or (local.get $x) (i64.const 3))))
      (local.set $x (i64.div_u (i64.const -1) (i64.or (local.get $x) (i64.const 3))))
      (br $again))
    (i32.const 0)))
