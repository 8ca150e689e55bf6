;; Multi-value blocks and loops, and block types given by type index.
(module
  (type $pair (func (param i32 i32) (result i32 i32)))
  (type $acc (func (param i32) (result i32)))

  (func $swap (export "swap") (param i32 i32) (result i32 i32)
    (local.get 1) (local.get 0))

  ;; A block with two results, and a block of type $pair taking params.
  (func (export "divmod") (param $a i32) (param $b i32) (result i32 i32)
    (block (result i32 i32)
      (i32.div_u (local.get $a) (local.get $b))
      (i32.rem_u (local.get $a) (local.get $b)))
    (block (type $pair) (call $swap))
    (call $swap))

  ;; A loop with a parameter: the accumulator rides on the stack.
  (func (export "tri") (param $n i32) (result i32)
    (i32.const 0)
    (loop $l (type $acc)
      (i32.add (local.get $n))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br_if $l (i32.gt_s (local.get $n) (i32.const 0)))))

  ;; if with params and results given by type index.
  (func (export "order") (param i32 i32) (result i32 i32)
    (local.get 0) (local.get 1)
    (if (type $pair) (i32.gt_u (local.get 0) (local.get 1))
      (then (call $swap))
      (else))))
