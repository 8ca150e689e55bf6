;; SIMD: constants, shuffles, lanes, loads and stores, and opcodes encoded
;; in two bytes.
(module
  (memory 1)
  (func (export "simd") (param $x i32) (result i32)
    (local $v v128)
    (local.set $v (v128.const i32x4 1 2 3 4))
    (local.set $v (i32x4.replace_lane 2 (local.get $v) (local.get $x)))
    (local.set $v (i8x16.shuffle 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
      (local.get $v) (i32x4.splat (i32.const -5))))
    (v128.store (i32.const 16) (local.get $v))
    (local.set $v (v128.load32_lane 1 (i32.const 16) (local.get $v)))
    (v128.store64_lane 0 (i32.const 64) (local.get $v))
    (local.set $v (i16x8.abs (i32x4.add (local.get $v) (v128.load (i32.const 16)))))
    (local.set $v (i32x4.mul (local.get $v) (i32x4.dot_i16x8_s (local.get $v) (local.get $v))))
    (local.set $v (f32x4.convert_i32x4_s (i32x4.trunc_sat_f32x4_s (f32x4.sqrt (f32x4.abs (local.get $v))))))
    (i32.add
      (i32.add (i32x4.extract_lane 0 (local.get $v)) (i32x4.extract_lane 3 (local.get $v)))
      (i32.add (i8x16.bitmask (local.get $v)) (i32.load (i32.const 64))))))
