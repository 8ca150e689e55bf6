;; A start section: it must run after the host set the fuel.
(module
  (global $g (mut i32) (i32.const 0))
  (func $init
    (local $i i32)
    (loop $l
      (global.set $g (i32.add (global.get $g) (local.get $i)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 10)))))
  (start $init)
  (func (export "get") (result i32) (global.get $g)))
