;; Nested blocks with br, br_if and br_table, if/else, and a branch to the
;; function's own label.
(module
  (func $classify (export "classify") (param $x i32) (result i32)
    (block $big
      (block $two
        (block $one
          (block $zero
            (br_table $zero $one $two $big (local.get $x)))
          (return (i32.const 100)))
        (br_if 2 (i32.const 101) (i32.eqz (local.get $x)))
        (return (i32.const 101)))
      (return (i32.const 102)))
    (i32.const 103))

  (func $sign (export "sign") (param $x i32) (result i32)
    (if (result i32) (i32.lt_s (local.get $x) (i32.const 0))
      (then (i32.const -1))
      (else
        (if (result i32) (i32.eqz (local.get $x))
          (then (i32.const 0))
          (else (i32.const 1))))))

  ;; if without else, and an early exit through the body label.
  (func (export "clamp") (param $x i32) (result i32)
    (if (i32.gt_s (local.get $x) (i32.const 10))
      (then (local.set $x (i32.const 10))))
    (br_if 0 (local.get $x) (i32.lt_s (local.get $x) (i32.const 0)))
    (drop)
    (local.get $x))

  ;; Exercise everything in a loop for a bigger, deterministic workload.
  (func (export "mix") (param $n i32) (result i32)
    (local $i i32) (local $acc i32)
    (loop $l
      (local.set $acc (i32.add (local.get $acc)
        (i32.add (call $classify (i32.rem_u (local.get $i) (i32.const 5)))
                 (call $sign (i32.sub (local.get $i) (i32.const 7))))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $acc)))
