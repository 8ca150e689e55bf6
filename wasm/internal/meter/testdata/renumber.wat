;; Function indices in every place that names one. Instrument imports
;; fuel_slice after env.charge, which moves every defined function up by
;; one: calls, ref.func in code and in a global's initialiser, exports, the
;; start function, element segments in all their forms, and the name
;; section (which TestInstrument_Names appends, so that the fixture builds
;; with plain wat2wasm) must all follow.
(module
  (import "env" "charge" (func $charge (param i32)))
  (type $un (func (param i32) (result i32)))
  (table $t 8 funcref)
  (table $t2 4 funcref)
  (global $fr funcref (ref.func $triple))
  (global $count (mut i32) (i32.const 0))

  ;; Active, table 0, indices (flags 0).
  (elem (i32.const 0) $double $square)
  ;; Active, explicit table, indices (flags 2).
  (elem (table $t) (i32.const 2) func $inc)
  ;; Active, table 0, expressions (flags 4).
  (elem (i32.const 3) funcref (ref.func $fact) (ref.null func))
  ;; Active, explicit table, expressions (flags 6).
  (elem (table $t) (i32.const 5) funcref (ref.func $boom))
  ;; Passive, indices (flags 1) and expressions (flags 5).
  (elem $p func $square $inc)
  (elem $pe funcref (ref.func $fact))
  ;; Declarative, indices (flags 3) and expressions (flags 7).
  (elem declare func $triple)
  (elem declare funcref (ref.func $double))

  (func $double (type $un) (i32.mul (local.get 0) (i32.const 2)))
  (func $square (type $un) (i32.mul (local.get 0) (local.get 0)))
  (func $inc (type $un) (i32.add (local.get 0) (i32.const 1)))
  (func $triple (type $un) (i32.mul (local.get 0) (i32.const 3)))
  (func $fact (type $un)
    (if (result i32) (i32.le_s (local.get 0) (i32.const 1))
      (then (i32.const 1))
      (else (i32.mul (local.get 0) (call $fact (i32.sub (local.get 0) (i32.const 1)))))))
  (func $boom (type $un) (call $deeper (local.get 0)))
  (func $deeper (type $un) (unreachable))
  (func $init (global.set $count (i32.const 10)))
  (start $init)

  ;; Through table $t: 0 double, 1 square, 2 inc, 3 fact, 4 null, 5 boom.
  (func $apply (export "apply") (param $f i32) (param $x i32) (result i32)
    (call_indirect $t (type $un) (local.get $x) (local.get $f)))

  ;; Through the passive segments: square(inc(fact(x))).
  (func $passive (export "passive") (param $x i32) (result i32)
    (table.init $t2 $p (i32.const 0) (i32.const 0) (i32.const 2))
    (table.init $t2 $pe (i32.const 2) (i32.const 0) (i32.const 1))
    (call_indirect $t2 (type $un)
      (call_indirect $t2 (type $un)
        (call_indirect $t2 (type $un) (local.get $x) (i32.const 2))
        (i32.const 1))
      (i32.const 0)))

  ;; ref.func in code, and in the global's initialiser.
  (func $refs (export "refs") (param $x i32) (result i32)
    (table.set $t2 (i32.const 3) (ref.func $double))
    (call_indirect $t2 (type $un) (local.get $x) (i32.const 3))
    (table.set $t2 (i32.const 3) (global.get $fr))
    (call_indirect $t2 (type $un) (i32.const 3)))

  ;; Direct calls, the host import, and what the start function left.
  (func $direct (export "direct") (param $x i32) (result i32)
    (call $charge (i32.const 5))
    (i32.add (global.get $count) (call $fact (call $inc (local.get $x)))))

  (export "fact" (func $fact))
  (export "boom" (func $boom)))
