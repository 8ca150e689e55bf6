;; exit256: a command that calls proc_exit(256), whose low 8 bits are 0.
;; Only status exactly 0 passes, so this is a fail with exit code 256.
(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (func (export "_start")
    (call $proc_exit (i32.const 256))))
