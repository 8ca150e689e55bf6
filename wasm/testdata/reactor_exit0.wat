;; reactor_exit0: a reactor whose assay_check calls proc_exit(0) before it
;; returns. A reactor passes only by returning 0 from assay_check, so this
;; is a fail.
(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (func (export "assay_check") (result i32)
    (call $proc_exit (i32.const 0))
    (i32.const 0)))
