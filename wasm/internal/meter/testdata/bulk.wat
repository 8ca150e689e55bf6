;; Bulk memory and table operations, and memory.grow.
(module
  (memory (export "memory") 1 4)
  (data $d "0123456789abcdef")
  (table $t 4 16 funcref)
  (elem $e func $f0 $f1)
  (func $f0 (result i32) (i32.const 0))
  (func $f1 (result i32) (i32.const 1))

  ;; Fill n bytes at 0 with v, copy them to 1024, return the byte at 1024+n-1.
  (func (export "fillcopy") (param $n i32) (param $v i32) (result i32)
    (memory.fill (i32.const 0) (local.get $v) (local.get $n))
    (memory.copy (i32.const 1024) (i32.const 0) (local.get $n))
    (i32.load8_u (i32.sub (i32.add (i32.const 1024) (local.get $n)) (i32.const 1))))

  ;; Copy n bytes of the passive segment to 2048 and return the last one.
  (func (export "init") (param $n i32) (result i32)
    (memory.init $d (i32.const 2048) (i32.const 0) (local.get $n))
    (i32.load8_u (i32.add (i32.const 2047) (local.get $n))))

  (func (export "drop") (data.drop $d))

  ;; Grow by n pages; returns the old size or -1.
  (func (export "grow") (param $n i32) (result i32)
    (memory.grow (local.get $n)))

  (func (export "size") (result i32) (memory.size))

  ;; Table operations; returns the sum of the calls through the table.
  (func (export "tables") (result i32)
    (table.init $t $e (i32.const 0) (i32.const 0) (i32.const 2))
    (table.copy $t $t (i32.const 2) (i32.const 0) (i32.const 2))
    (drop (table.grow $t (ref.null func) (i32.const 3)))
    (table.fill $t (i32.const 5) (ref.func $f1) (i32.const 2))
    (elem.drop $e)
    (i32.add
      (i32.add (call_indirect (result i32) (i32.const 2))
               (call_indirect (result i32) (i32.const 3)))
      (i32.add (call_indirect (result i32) (i32.const 6))
               (table.size $t))))

  ;; Fills memory forever.
  (func (export "fillforever")
    (loop $l
      (memory.fill (i32.const 0) (i32.const 7) (i32.const 65536))
      (br $l))))
