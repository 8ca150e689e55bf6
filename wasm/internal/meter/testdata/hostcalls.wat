;; Loops over WASI host calls, and an arithmetic loop, for the calibration
;; of HostCallCost, PollSubscriptionCost and IovecCost
;; (BenchmarkHostCalls) and the exact charges of TestInstrument_HostCalls.
;; Memory: subscriptions at 0 (48 bytes each, all zero: clock subscriptions
;; with a timeout of 0), events at 8192, counts at 16384, iovecs at 20000
;; (8 bytes each, all zero: empty), random bytes at 30000.
(module
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get" (func $random (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_pwrite" (func $pwrite (param i32 i32 i32 i64 i32) (result i32)))
  (memory (export "memory") 1)
  (type $pollT (func (param i32 i32 i32 i32) (result i32)))
  (table $t 2 funcref)
  (elem (i32.const 0) $poll)

  ;; poll_oneoff through the table, from the element segment (slot 0) or
  ;; from ref.func (slot 1): the call reaches the import's wrapper, which
  ;; pays what a direct call pays.
  (func (export "pollindirect") (param $subs i32) (param $slot i32) (result i32)
    (table.set $t (i32.const 1) (ref.func $poll))
    (call_indirect $t (type $pollT) (i32.const 0) (i32.const 8192) (local.get $subs) (i32.const 16384) (local.get $slot)))

  ;; n calls of poll_oneoff with subs subscriptions; returns the last errno.
  (func (export "poll") (param $n i32) (param $subs i32) (result i32)
    (local $r i32)
    (loop $l
      (local.set $r (call $poll (i32.const 0) (i32.const 8192) (local.get $subs) (i32.const 16384)))
      (br_if $l (local.tee $n (i32.sub (local.get $n) (i32.const 1)))))
    (local.get $r))

  ;; n calls of random_get for one byte.
  (func (export "random") (param $n i32) (result i32)
    (local $r i32)
    (loop $l
      (local.set $r (call $random (i32.const 30000) (i32.const 1)))
      (br_if $l (local.tee $n (i32.sub (local.get $n) (i32.const 1)))))
    (local.get $r))

  ;; n calls of fd_write to stdout of iovs empty iovecs.
  (func (export "write") (param $n i32) (param $iovs i32) (result i32)
    (local $r i32)
    (loop $l
      (local.set $r (call $write (i32.const 1) (i32.const 20000) (local.get $iovs) (i32.const 16384)))
      (br_if $l (local.tee $n (i32.sub (local.get $n) (i32.const 1)))))
    (local.get $r))

  ;; One call of fd_pwrite to stdout of iovs empty iovecs at offset 7.
  (func (export "pwrite") (param $iovs i32) (result i32)
    (call $pwrite (i32.const 1) (i32.const 20000) (local.get $iovs) (i64.const 7) (i32.const 16384)))

  ;; n iterations of a little arithmetic.
  (func (export "arith") (param $n i32) (result i32)
    (local $x i32)
    (loop $l
      (local.set $x (i32.add (i32.mul (local.get $x) (i32.const 31)) (local.get $n)))
      (br_if $l (local.tee $n (i32.sub (local.get $n) (i32.const 1)))))
    (local.get $x)))
