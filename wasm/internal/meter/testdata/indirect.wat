;; call_indirect through a table, including a recursive one.
(module
  (type $un (func (param i32) (result i32)))
  (table 3 funcref)
  (elem (i32.const 0) $double $square $fact)
  (func $double (type $un) (i32.mul (local.get 0) (i32.const 2)))
  (func $square (type $un) (i32.mul (local.get 0) (local.get 0)))
  (func $fact (type $un)
    (if (result i32) (i32.le_s (local.get 0) (i32.const 1))
      (then (i32.const 1))
      (else (i32.mul (local.get 0)
        (call_indirect (type $un) (i32.sub (local.get 0) (i32.const 1)) (i32.const 2))))))
  (func (export "apply") (param $f i32) (param $x i32) (result i32)
    (call_indirect (type $un) (local.get $x) (local.get $f))))
