;; fullcaps: writes exactly the default output caps, 64 KiB of "A" to
;; stdout and 64 KiB to stderr, then exits 0: the most output a passing
;; checker can give a batch's answer.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 2)
  (func (export "_start")
    (memory.fill (i32.const 65536) (i32.const 65) (i32.const 65536))
    (i32.store (i32.const 0) (i32.const 65536))
    (i32.store (i32.const 4) (i32.const 65536))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
    (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8)))))
