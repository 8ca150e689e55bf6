;; Calls an imported host function that charges fuel by rewriting the global.
(module
  (import "env" "charge" (func $charge (param i32)))
  (import "g" "base" (global $base i32))
  (global $count (mut i32) (i32.const 0))
  ;; One segment: global.get, i32.const, i32.add, call = 4 before the call
  ;; and global.get, i32.const, i32.add, global.set, global.get = 5 after it,
  ;; all charged at entry (9); the host charges base+100 during the call.
  (func (export "work") (result i32)
    (call $charge (i32.add (global.get $base) (i32.const 100)))
    (global.set $count (i32.add (global.get $count) (i32.const 1)))
    (global.get $count))
  (func (export "loop") (param $n i32)
    (loop $l
      (call $charge (i32.const 1))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br_if $l (local.get $n)))))
