;; A counted loop: sum of 0..n-1, and an infinite loop.
(module
  (func (export "sum") (param $n i32) (result i64)
    (local $i i32) (local $acc i64)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $acc (i64.add (local.get $acc) (i64.extend_i32_u (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $acc))

  ;; Never ends unless fuel runs out.
  (func (export "forever")
    (loop $l (br $l))))
