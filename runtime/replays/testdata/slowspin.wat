;; slowspin: an endless loop of dependent 64-bit divisions, the costliest
;; wall time per fuel we found (0.6 ns here): a guest that is not stopped
;; runs 2.4 s on MaxFuel, where the tightest loop spends it in under one.
(module
  (memory (export "memory") 1)
  (func (export "_start")
    (local $x i64)
    (local.set $x (i64.const -1))
    (loop $again
      (local.set $x (i64.div_u (i64.const -1) (i64.or (local.get $x) (i64.const 3))))
      (local.set $x (i64.div_u (i64.const -1) (i64.or (local.get $x) (i64.const 3))))
      (local.set $x (i64.div_u (i64.const -1) (i64.or (local.get $x) (i64.const 3))))
      (local.set $x (i64.div_u (i64.const -1) (i64.or (local.get $x) (i64.const 3))))
      (br $again))))
