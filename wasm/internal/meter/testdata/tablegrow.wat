;; Tables without a maximum, and with one above the meter's MaxTableSize:
;; Instrument lowers both to MaxTableSize, so table.grow past it returns -1.
(module
  (table $t 1 funcref)
  (table $u 2 1000000 funcref)
  (func (export "grow") (param $n i32) (result i32)
    (table.grow $t (ref.null func) (local.get $n)))
  (func (export "growu") (param $n i32) (result i32)
    (table.grow $u (ref.null func) (local.get $n)))
  (func (export "size") (result i32)
    (i32.add (table.size $t) (table.size $u))))
