;; Provides the global that import.wat imports as "g" "base".
(module (global (export "base") i32 (i32.const 0)))
