;; Hand-counted functions for exact fuel checks (see TestInstrument_ExactFuel).
(module
  ;; local.get, local.get, i32.add: 3 (the final end is free).
  (func (export "add") (param i32 i32) (result i32)
    (i32.add (local.get 0) (local.get 1)))

  ;; Entry segment: local.get, if = 2. Then-arm: i32.const, br 1 (return) = 2.
  ;; Else-arm: i32.const 2, return = 2. if's end: unreachable = 1 (dead).
  (func (export "pick") (param i32) (result i32)
    (if (local.get 0)
      (then (br 1 (i32.const 1)))
      (else (return (i32.const 2))))
    (unreachable))

  ;; Entry: i32.const 0, local.set = 2; loop header per iteration:
  ;; local.get, i32.const 1, i32.add, local.tee, i32.const 3, i32.lt_u,
  ;; br_if = 7, and the local.get after the loop = 1, since a br_if's
  ;; fallthrough is no new segment: the loop's segment pays for it on every
  ;; iteration. Three iterations: 2 + 3*8 = 26.
  (func (export "three") (result i32) (local i32)
    (local.set 0 (i32.const 0))
    (loop $l
      (br_if $l (i32.lt_u (local.tee 0 (i32.add (local.get 0) (i32.const 1))) (i32.const 3))))
    (local.get 0)))
