"""Per-row gradients and hessians of the built-in objectives.

Each kernel writes float32 pairs ``gpair[i] = (g_i, h_i)`` (multiplied by
the sample weight, when one is given: ``weight=None`` is unit weights,
with no array of ones) from float64 raw margins. The formulas:

- squared error, ``l = 1/2 (m - y)^2``: ``g = m - y``, ``h = 1``;
- logistic, ``p = sigmoid(m)``: ``g = p - y``, ``h = max(p (1 - p), eps)``;
- softmax over K classes, ``p = softmax(m)``: ``g_k = p_k - [y == k]``,
  ``h_k = max(2 p_k (1 - p_k), eps)``. The factor 2 makes the diagonal an
  upper bound of the softmax Hessian, so the K trees of a round, fitted
  independently, do not overshoot together; it is also what XGBoost uses,
  so tuned parameters (min_child_weight) carry over;
- every other element-wise loss through ``elementwise_gradient``, the loss
  picked by a code of ``LOSS_CODES`` (formulas beside ``ElementwiseLoss``).
"""

import numpy as np

from skboost._openmp_helpers import check_n_threads

cimport cython

from cython.parallel cimport parallel, prange
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.math cimport INFINITY, NAN, exp, fabsf, fmax, log1p, sqrt

from ._math cimport sigmoid
from ._parallel cimport threads_for_work

# Every kernel here is one independent computation per row: rows are split
# among threads statically (contiguous ranges, streamed), and a row's pair
# depends on its own inputs only, so the pairs are the same for any thread
# count. Pairs are float32 (half the memory traffic of the histogram
# builders, which sum them in exact int64 fixed point).

# the smallest hessian written: a saturated sigmoid's p (1 - p) rounds to
# 0, and a leaf of such rows would get an infinite weight
cdef double HESSIAN_FLOOR = 1e-16

# Labels of the logistic kernel: float64, or uint8 / float32 where every
# label is one exactly (a classifier's class indices out of core, 1 or 4
# bytes a row); promoted to double before any arithmetic, so all give the
# same pairs.
ctypedef fused label_t:
    uint8_t
    float
    double

cdef inline const double* weight_pointer(const double[::1] weight):
    """Data pointer of the weights, NULL for None (unit weights: nothing
    multiplied, no array of ones kept)."""
    if weight is None or weight.shape[0] == 0:
        return NULL
    return &weight[0]


cdef inline double times_weight(double value, const double* w,
                                Py_ssize_t i) noexcept nogil:
    """``value * w[i]``, or ``value`` itself for unit weights (``w`` NULL;
    the same bits: ``x * 1.0 == x``)."""
    return value * w[i] if w != NULL else value


cdef inline double floored_hessian(double h) noexcept nogil:
    """``fmax(h, HESSIAN_FLOOR)`` inline (the floor for NaN too): fmax is
    a library call, a tenth of the logistic kernel's time."""
    return h if h > HESSIAN_FLOOR else HESSIAN_FLOOR


cdef extern from *:
    """
    /* glibc's exp (2.28 on: ARM's optimized-routines algorithm, a
       128-entry table and a degree-5 polynomial), eight lanes at a time
       in AVX-512 registers, giving libm's exact bits. x = k ln2/128 + r;
       exp(x) = 2^(k/128) exp(r), 2^(k/128) from the table (a scale and a
       tail), exp(r) - 1 from the polynomial. The operations are those of
       glibc's FMA variant (__ieee754_exp_fma, which its ifunc picks on
       every CPU with FMA, so on every CPU with AVX-512), in its order and
       with its fused multiply-adds (read off its machine code): each
       lane rounds as the scalar function does. Lanes outside its main
       path (|x| < 2^-54, |x| >= 512, NaN, infinities: glibc's special
       cases) get NaN here, for the caller to hand to libm's exp. The
       table and constants are glibc's __exp_data; skb_vector_exp_init
       checks the lanes against the running libm's exp before any use, so
       another libm (or another algorithm) keeps the scalar path. */
    #include <math.h>
    #include <stdint.h>
    #include <string.h>
    #if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) \
        && (__GNUC__ >= 8)
    #include <immintrin.h>
    static const uint64_t skb_exp_table[256] = {
        0x0000000000000000ull, 0x3ff0000000000000ull, 0x3c9b3b4f1a88bf6eull, 0x3feff63da9fb3335ull,
        0xbc7160139cd8dc5dull, 0x3fefec9a3e778061ull, 0xbc905e7a108766d1ull, 0x3fefe315e86e7f85ull,
        0x3c8cd2523567f613ull, 0x3fefd9b0d3158574ull, 0xbc8bce8023f98efaull, 0x3fefd06b29ddf6deull,
        0x3c60f74e61e6c861ull, 0x3fefc74518759bc8ull, 0x3c90a3e45b33d399ull, 0x3fefbe3ecac6f383ull,
        0x3c979aa65d837b6dull, 0x3fefb5586cf9890full, 0x3c8eb51a92fdeffcull, 0x3fefac922b7247f7ull,
        0x3c3ebe3d702f9cd1ull, 0x3fefa3ec32d3d1a2ull, 0xbc6a033489906e0bull, 0x3fef9b66affed31bull,
        0xbc9556522a2fbd0eull, 0x3fef9301d0125b51ull, 0xbc5080ef8c4eea55ull, 0x3fef8abdc06c31ccull,
        0xbc91c923b9d5f416ull, 0x3fef829aaea92de0ull, 0x3c80d3e3e95c55afull, 0x3fef7a98c8a58e51ull,
        0xbc801b15eaa59348ull, 0x3fef72b83c7d517bull, 0xbc8f1ff055de323dull, 0x3fef6af9388c8deaull,
        0x3c8b898c3f1353bfull, 0x3fef635beb6fcb75ull, 0xbc96d99c7611eb26ull, 0x3fef5be084045cd4ull,
        0x3c9aecf73e3a2f60ull, 0x3fef54873168b9aaull, 0xbc8fe782cb86389dull, 0x3fef4d5022fcd91dull,
        0x3c8a6f4144a6c38dull, 0x3fef463b88628cd6ull, 0x3c807a05b0e4047dull, 0x3fef3f49917ddc96ull,
        0x3c968efde3a8a894ull, 0x3fef387a6e756238ull, 0x3c875e18f274487dull, 0x3fef31ce4fb2a63full,
        0x3c80472b981fe7f2ull, 0x3fef2b4565e27cddull, 0xbc96b87b3f71085eull, 0x3fef24dfe1f56381ull,
        0x3c82f7e16d09ab31ull, 0x3fef1e9df51fdee1ull, 0xbc3d219b1a6fbffaull, 0x3fef187fd0dad990ull,
        0x3c8b3782720c0ab4ull, 0x3fef1285a6e4030bull, 0x3c6e149289cecb8full, 0x3fef0cafa93e2f56ull,
        0x3c834d754db0abb6ull, 0x3fef06fe0a31b715ull, 0x3c864201e2ac744cull, 0x3fef0170fc4cd831ull,
        0x3c8fdd395dd3f84aull, 0x3feefc08b26416ffull, 0xbc86a3803b8e5b04ull, 0x3feef6c55f929ff1ull,
        0xbc924aedcc4b5068ull, 0x3feef1a7373aa9cbull, 0xbc9907f81b512d8eull, 0x3feeecae6d05d866ull,
        0xbc71d1e83e9436d2ull, 0x3feee7db34e59ff7ull, 0xbc991919b3ce1b15ull, 0x3feee32dc313a8e5ull,
        0x3c859f48a72a4c6dull, 0x3feedea64c123422ull, 0xbc9312607a28698aull, 0x3feeda4504ac801cull,
        0xbc58a78f4817895bull, 0x3feed60a21f72e2aull, 0xbc7c2c9b67499a1bull, 0x3feed1f5d950a897ull,
        0x3c4363ed60c2ac11ull, 0x3feece086061892dull, 0x3c9666093b0664efull, 0x3feeca41ed1d0057ull,
        0x3c6ecce1daa10379ull, 0x3feec6a2b5c13cd0ull, 0x3c93ff8e3f0f1230ull, 0x3feec32af0d7d3deull,
        0x3c7690cebb7aafb0ull, 0x3feebfdad5362a27ull, 0x3c931dbdeb54e077ull, 0x3feebcb299fddd0dull,
        0xbc8f94340071a38eull, 0x3feeb9b2769d2ca7ull, 0xbc87deccdc93a349ull, 0x3feeb6daa2cf6642ull,
        0xbc78dec6bd0f385full, 0x3feeb42b569d4f82ull, 0xbc861246ec7b5cf6ull, 0x3feeb1a4ca5d920full,
        0x3c93350518fdd78eull, 0x3feeaf4736b527daull, 0x3c7b98b72f8a9b05ull, 0x3feead12d497c7fdull,
        0x3c9063e1e21c5409ull, 0x3feeab07dd485429ull, 0x3c34c7855019c6eaull, 0x3feea9268a5946b7ull,
        0x3c9432e62b64c035ull, 0x3feea76f15ad2148ull, 0xbc8ce44a6199769full, 0x3feea5e1b976dc09ull,
        0xbc8c33c53bef4da8ull, 0x3feea47eb03a5585ull, 0xbc845378892be9aeull, 0x3feea34634ccc320ull,
        0xbc93cedd78565858ull, 0x3feea23882552225ull, 0x3c5710aa807e1964ull, 0x3feea155d44ca973ull,
        0xbc93b3efbf5e2228ull, 0x3feea09e667f3bcdull, 0xbc6a12ad8734b982ull, 0x3feea012750bdabfull,
        0xbc6367efb86da9eeull, 0x3fee9fb23c651a2full, 0xbc80dc3d54e08851ull, 0x3fee9f7df9519484ull,
        0xbc781f647e5a3ecfull, 0x3fee9f75e8ec5f74ull, 0xbc86ee4ac08b7db0ull, 0x3fee9f9a48a58174ull,
        0xbc8619321e55e68aull, 0x3fee9feb564267c9ull, 0x3c909ccb5e09d4d3ull, 0x3feea0694fde5d3full,
        0xbc7b32dcb94da51dull, 0x3feea11473eb0187ull, 0x3c94ecfd5467c06bull, 0x3feea1ed0130c132ull,
        0x3c65ebe1abd66c55ull, 0x3feea2f336cf4e62ull, 0xbc88a1c52fb3cf42ull, 0x3feea427543e1a12ull,
        0xbc9369b6f13b3734ull, 0x3feea589994cce13ull, 0xbc805e843a19ff1eull, 0x3feea71a4623c7adull,
        0xbc94d450d872576eull, 0x3feea8d99b4492edull, 0x3c90ad675b0e8a00ull, 0x3feeaac7d98a6699ull,
        0x3c8db72fc1f0eab4ull, 0x3feeace5422aa0dbull, 0xbc65b6609cc5e7ffull, 0x3feeaf3216b5448cull,
        0x3c7bf68359f35f44ull, 0x3feeb1ae99157736ull, 0xbc93091fa71e3d83ull, 0x3feeb45b0b91ffc6ull,
        0xbc5da9b88b6c1e29ull, 0x3feeb737b0cdc5e5ull, 0xbc6c23f97c90b959ull, 0x3feeba44cbc8520full,
        0xbc92434322f4f9aaull, 0x3feebd829fde4e50ull, 0xbc85ca6cd7668e4bull, 0x3feec0f170ca07baull,
        0x3c71affc2b91ce27ull, 0x3feec49182a3f090ull, 0x3c6dd235e10a73bbull, 0x3feec86319e32323ull,
        0xbc87c50422622263ull, 0x3feecc667b5de565ull, 0x3c8b1c86e3e231d5ull, 0x3feed09bec4a2d33ull,
        0xbc91bbd1d3bcbb15ull, 0x3feed503b23e255dull, 0x3c90cc319cee31d2ull, 0x3feed99e1330b358ull,
        0x3c8469846e735ab3ull, 0x3feede6b5579fdbfull, 0xbc82dfcd978e9db4ull, 0x3feee36bbfd3f37aull,
        0x3c8c1a7792cb3387ull, 0x3feee89f995ad3adull, 0xbc907b8f4ad1d9faull, 0x3feeee07298db666ull,
        0xbc55c3d956dcaebaull, 0x3feef3a2b84f15fbull, 0xbc90a40e3da6f640ull, 0x3feef9728de5593aull,
        0xbc68d6f438ad9334ull, 0x3feeff76f2fb5e47ull, 0xbc91eee26b588a35ull, 0x3fef05b030a1064aull,
        0x3c74ffd70a5fddcdull, 0x3fef0c1e904bc1d2ull, 0xbc91bdfbfa9298acull, 0x3fef12c25bd71e09ull,
        0x3c736eae30af0cb3ull, 0x3fef199bdd85529cull, 0x3c8ee3325c9ffd94ull, 0x3fef20ab5fffd07aull,
        0x3c84e08fd10959acull, 0x3fef27f12e57d14bull, 0x3c63cdaf384e1a67ull, 0x3fef2f6d9406e7b5ull,
        0x3c676b2c6c921968ull, 0x3fef3720dcef9069ull, 0xbc808a1883ccb5d2ull, 0x3fef3f0b555dc3faull,
        0xbc8fad5d3ffffa6full, 0x3fef472d4a07897cull, 0xbc900dae3875a949ull, 0x3fef4f87080d89f2ull,
        0x3c74a385a63d07a7ull, 0x3fef5818dcfba487ull, 0xbc82919e2040220full, 0x3fef60e316c98398ull,
        0x3c8e5a50d5c192acull, 0x3fef69e603db3285ull, 0x3c843a59ac016b4bull, 0x3fef7321f301b460ull,
        0xbc82d52107b43e1full, 0x3fef7c97337b9b5full, 0xbc892ab93b470dc9ull, 0x3fef864614f5a129ull,
        0x3c74b604603a88d3ull, 0x3fef902ee78b3ff6ull, 0x3c83c5ec519d7271ull, 0x3fef9a51fbc74c83ull,
        0xbc8ff7128fd391f0ull, 0x3fefa4afa2a490daull, 0xbc8dae98e223747dull, 0x3fefaf482d8e67f1ull,
        0x3c8ec3bc41aa2008ull, 0x3fefba1bee615a27ull, 0x3c842b94c3a9eb32ull, 0x3fefc52b376bba97ull,
        0x3c8a64a931d185eeull, 0x3fefd0765b6e4540ull, 0xbc8e37bae43be3edull, 0x3fefdbfdad9cbe14ull,
        0x3c77893b4d91cd9dull, 0x3fefe7c1819e90d8ull, 0x3c5305c14160cc89ull, 0x3feff3c22b8f71f1ull,
    };
    #define SKB_EXP_CONSTANT(bits) \
        _mm512_castsi512_pd(_mm512_set1_epi64((long long) (bits)))

    /* exp of the lanes of x on glibc's main path (the caller flags the
       others): its steps, one for one. */
    __attribute__((target("avx512f")))
    static inline __m512d skb_exp8(__m512d x) {
        const __m512d shift = SKB_EXP_CONSTANT(0x4338000000000000ull);
        /* k = round(x 128/ln2) in the low bits of kd (the shift) */
        __m512d kd = _mm512_fmadd_pd(
            x, SKB_EXP_CONSTANT(0x40671547652b82feull), shift);
        __m512i ki = _mm512_castpd_si512(kd);
        kd = _mm512_sub_pd(kd, shift);
        /* r = x - k ln2/128, ln2/128 in two parts */
        __m512d r = _mm512_fmadd_pd(
            kd, SKB_EXP_CONSTANT(0xbf762e42fefa0000ull), x);
        r = _mm512_fmadd_pd(kd, SKB_EXP_CONSTANT(0xbd0cf79abc9e3b3aull), r);
        __m512i idx = _mm512_slli_epi64(
            _mm512_and_si512(ki, _mm512_set1_epi64(127)), 1);
        __m512d tail = _mm512_i64gather_pd(idx, skb_exp_table, 8);
        __m512i sbits = _mm512_add_epi64(
            _mm512_i64gather_epi64(idx, skb_exp_table + 1, 8),
            _mm512_slli_epi64(ki, 45));
        /* tmp = tail + r + r^2 (C2 + r C3) + r^4 (C4 + r C5) */
        __m512d r2 = _mm512_mul_pd(r, r);
        __m512d c23 = _mm512_fmadd_pd(
            r, SKB_EXP_CONSTANT(0x3fc555555555543cull),
            SKB_EXP_CONSTANT(0x3fdffffffffffdbdull));
        __m512d c45 = _mm512_fmadd_pd(
            r, SKB_EXP_CONSTANT(0x3f81111167a4d017ull),
            SKB_EXP_CONSTANT(0x3fa55555cf172b91ull));
        __m512d tmp = _mm512_fmadd_pd(c23, r2, _mm512_add_pd(r, tail));
        tmp = _mm512_fmadd_pd(_mm512_mul_pd(r2, r2), c45, tmp);
        __m512d scale = _mm512_castsi512_pd(sbits);
        return _mm512_fmadd_pd(scale, tmp, scale);
    }

    /* Lanes on glibc's main path: 2^-54 <= |x| < 512 (the exponent field
       of x, minus that of 2^-54, below 63, unsigned). */
    __attribute__((target("avx512f")))
    static inline __mmask8 skb_exp_main_path(__m512i bits) {
        __m512i exponent = _mm512_and_si512(
            _mm512_srli_epi64(bits, 52), _mm512_set1_epi64(0x7ff));
        return _mm512_cmplt_epu64_mask(
            _mm512_sub_epi64(exponent, _mm512_set1_epi64(969)),
            _mm512_set1_epi64(63));
    }

    /* out[i] = exp(x[i]), NaN where libm's exp must decide. */
    __attribute__((target("avx512f")))
    static void skb_exp_lanes(const double* x, double* out, int64_t n) {
        for (int64_t i = 0; i < n; i += 8) {
            __mmask8 live = n - i >= 8 ? 0xFF : (__mmask8) ((1u << (n - i)) - 1);
            __m512d v = _mm512_maskz_loadu_pd(live, x + i);
            __mmask8 main_path = skb_exp_main_path(_mm512_castpd_si512(v));
            __m512d e = _mm512_mask_blend_pd(
                main_path, _mm512_set1_pd(NAN), skb_exp8(v));
            _mm512_mask_storeu_pd(out + i, live, e);
        }
    }

    /* p[i] = sigmoid(m[i]) as skboost/_math.pxd's sigmoid computes it
       (e = exp(-|m|), (m >= 0 ? 1 : e) / (1 + e): every step rounded
       once, as there), NaN where libm's exp must decide (the caller
       then calls that sigmoid). Returns the number of those lanes. */
    __attribute__((target("avx512f")))
    static int64_t skb_sigmoid_lanes(const double* m, double* p, int64_t n) {
        const __m512d one = _mm512_set1_pd(1.0);
        int64_t left_to_libm = 0;
        for (int64_t i = 0; i < n; i += 8) {
            __mmask8 live = n - i >= 8 ? 0xFF : (__mmask8) ((1u << (n - i)) - 1);
            __m512d v = _mm512_maskz_loadu_pd(live, m + i);
            __m512i minus_abs = _mm512_or_si512(   /* -|m|: the sign set */
                _mm512_castpd_si512(v), _mm512_set1_epi64(INT64_MIN));
            __mmask8 main_path = skb_exp_main_path(minus_abs);
            __m512d e = skb_exp8(_mm512_castsi512_pd(minus_abs));
            __m512d numerator = _mm512_mask_blend_pd(
                _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_GE_OQ),
                e, one);
            __m512d prob = _mm512_div_pd(numerator, _mm512_add_pd(one, e));
            _mm512_mask_storeu_pd(p + i, live, _mm512_mask_blend_pd(
                main_path, _mm512_set1_pd(NAN), prob));
            left_to_libm += __builtin_popcount(live & ~main_path);
        }
        return left_to_libm;
    }

    /* Labels of 16 rows as two vectors of 8 doubles, one function per
       label type (the logistic kernel's fused label_t). */
    __attribute__((target("avx512f")))
    static inline void skb_labels16_u8(const uint8_t* y, __m512d* lo,
                                       __m512d* hi) {
        __m512i wide = _mm512_cvtepu8_epi32(
            _mm_loadu_si128((const __m128i*) y));
        *lo = _mm512_cvtepi32_pd(_mm512_castsi512_si256(wide));
        *hi = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(wide, 1));
    }
    __attribute__((target("avx512f")))
    static inline void skb_labels16_f32(const float* y, __m512d* lo,
                                        __m512d* hi) {
        __m512 v = _mm512_loadu_ps(y);
        *lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
        *hi = _mm512_cvtps_pd(_mm256_castpd_ps(
            _mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    }
    __attribute__((target("avx512f")))
    static inline void skb_labels16_f64(const double* y, __m512d* lo,
                                        __m512d* hi) {
        *lo = _mm512_loadu_pd(y);
        *hi = _mm512_loadu_pd(y + 8);
    }

    /* (float) (v w) for 8 rows, (float) v for unit weights (w NULL):
       times_weight's rounding, one product then one conversion. */
    __attribute__((target("avx512f")))
    static inline __m256 skb_weighted8(__m512d v, const double* w) {
        if (w != NULL)
            v = _mm512_mul_pd(v, _mm512_loadu_pd(w));
        return _mm512_cvtpd_ps(v);
    }

    /* Two vectors of 8 floats as one of 16 (lo first). */
    __attribute__((target("avx512f")))
    static inline __m512 skb_joined16(__m256 lo, __m256 hi) {
        return _mm512_castpd_ps(_mm512_insertf64x4(
            _mm512_castps_pd(_mm512_castps256_ps512(lo)),
            _mm256_castps_pd(hi), 1));
    }

    /* Running extremes of the pairs written (pair_extremes' per lane):
       max |g|, max |h|, least h, and NaN flags of |g| and |h|. */
    typedef struct {
        __m512 largest_g, largest_h, least_h;
        __mmask16 nan_g, nan_h;
    } skb_pair_extremes16;

    __attribute__((target("avx512f")))
    static inline void skb_extremes_add(skb_pair_extremes16* x, __m512 g,
                                        __m512 h) {
        const __m512i magnitude = _mm512_set1_epi32(0x7fffffff);
        __m512 abs_g = _mm512_castsi512_ps(
            _mm512_and_si512(_mm512_castps_si512(g), magnitude));
        __m512 abs_h = _mm512_castsi512_ps(
            _mm512_and_si512(_mm512_castps_si512(h), magnitude));
        /* a lane takes a value only when it compares greater (less): a
           NaN never does, and raises the lane's flag instead */
        x->nan_g |= _mm512_cmp_ps_mask(abs_g, abs_g, _CMP_UNORD_Q);
        x->nan_h |= _mm512_cmp_ps_mask(abs_h, abs_h, _CMP_UNORD_Q);
        x->largest_g = _mm512_mask_mov_ps(x->largest_g, _mm512_cmp_ps_mask(
            abs_g, x->largest_g, _CMP_GT_OQ), abs_g);
        x->largest_h = _mm512_mask_mov_ps(x->largest_h, _mm512_cmp_ps_mask(
            abs_h, x->largest_h, _CMP_GT_OQ), abs_h);
        x->least_h = _mm512_mask_mov_ps(x->least_h, _mm512_cmp_ps_mask(
            h, x->least_h, _CMP_LT_OQ), h);
    }

    /* The lanes' extremes folded into pair_extremes' outputs (maxima and
       minima of non-NaN floats: exact, in any order). */
    __attribute__((target("avx512f")))
    static void skb_extremes_store(const skb_pair_extremes16* x,
                                   float* largest, uint8_t* nan,
                                   float* least) {
        float g[16], h[16], low[16];
        _mm512_storeu_ps(g, x->largest_g);
        _mm512_storeu_ps(h, x->largest_h);
        _mm512_storeu_ps(low, x->least_h);
        largest[0] = largest[1] = 0.0f;
        least[0] = INFINITY;
        for (int k = 0; k < 16; k++) {
            largest[0] = g[k] > largest[0] ? g[k] : largest[0];
            largest[1] = h[k] > largest[1] ? h[k] : largest[1];
            least[0] = low[k] < least[0] ? low[k] : least[0];
        }
        nan[0] = x->nan_g != 0;
        nan[1] = x->nan_h != 0;
    }

    /* Logistic pairs of the first n - n % 16 rows from their
       probabilities p (logistic_pair's steps, lane by lane: g = p - y,
       h = p (1 - p) floored at at_least, each times the weight, rounded to
       float once), interleaved into pairs (n, 2), and their extremes
       (pair_extremes' outputs). Returns the rows done; the caller does
       the rest one by one. Sixteen rows a step: two vectors of 8 doubles
       make one of 16 floats, g and h, then two stores of 8 interleaved
       pairs. */
    #define SKB_LOGISTIC_PAIRS(SUFFIX, LABEL)                                  \
    __attribute__((target("avx512f")))                                         \
    static int64_t skb_logistic_pairs_##SUFFIX(                                \
            const double* p, const LABEL* y, const double* w, double at_least, \
            float* pairs, int64_t n, float* largest, uint8_t* nan,             \
            float* least) {                                                    \
        const __m512d one = _mm512_set1_pd(1.0);                               \
        const __m512d hessian_floor = _mm512_set1_pd(at_least);                \
        const __m512i first = _mm512_set_epi32(                                \
            23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);           \
        const __m512i second = _mm512_add_epi32(first, _mm512_set1_epi32(8)); \
        skb_pair_extremes16 x = {_mm512_setzero_ps(), _mm512_setzero_ps(),     \
                                 _mm512_set1_ps(INFINITY), 0, 0};              \
        int64_t done = n - n % 16;                                             \
        for (int64_t i = 0; i < done; i += 16) {                               \
            __m512d label[2];                                                  \
            __m256 g[2], h[2];                                                 \
            skb_labels16_##SUFFIX(y + i, &label[0], &label[1]);                \
            for (int half = 0; half < 2; half++) {                             \
                int64_t row = i + 8 * half;                                    \
                __m512d prob = _mm512_loadu_pd(p + row);                       \
                __m512d curvature = _mm512_mul_pd(                             \
                    prob, _mm512_sub_pd(one, prob));                           \
                /* floored_hessian: the floor unless greater (NaN too) */      \
                curvature = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(           \
                    curvature, hessian_floor, _CMP_GT_OQ),                     \
                    hessian_floor, curvature);                                 \
                const double* wr = w != NULL ? w + row : NULL;                 \
                g[half] = skb_weighted8(                                       \
                    _mm512_sub_pd(prob, label[half]), wr);                     \
                h[half] = skb_weighted8(curvature, wr);                        \
            }                                                                  \
            __m512 g16 = skb_joined16(g[0], g[1]);                             \
            __m512 h16 = skb_joined16(h[0], h[1]);                             \
            _mm512_storeu_ps(pairs + 2 * i,                                    \
                             _mm512_permutex2var_ps(g16, first, h16));         \
            _mm512_storeu_ps(pairs + 2 * i + 16,                               \
                             _mm512_permutex2var_ps(g16, second, h16));        \
            skb_extremes_add(&x, g16, h16);                                    \
        }                                                                      \
        skb_extremes_store(&x, largest, nan, least);                           \
        return done;                                                           \
    }
    SKB_LOGISTIC_PAIRS(u8, uint8_t)
    SKB_LOGISTIC_PAIRS(f32, float)
    SKB_LOGISTIC_PAIRS(f64, double)

    /* Squared-error pairs of the first n - n % 16 rows (g = m - y,
       h = 1, each times the weight, rounded to float once: the scalar
       loop's steps) and their extremes, as the logistic pairs above. */
    __attribute__((target("avx512f")))
    static int64_t skb_squared_pairs(const double* m, const double* y,
                                     const double* w, float* pairs,
                                     int64_t n, float* largest,
                                     uint8_t* nan, float* least) {
        const __m512d one = _mm512_set1_pd(1.0);
        const __m512i first = _mm512_set_epi32(
            23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
        const __m512i second = _mm512_add_epi32(first, _mm512_set1_epi32(8));
        skb_pair_extremes16 x = {_mm512_setzero_ps(), _mm512_setzero_ps(),
                                 _mm512_set1_ps(INFINITY), 0, 0};
        int64_t done = n - n % 16;
        for (int64_t i = 0; i < done; i += 16) {
            __m256 g[2], h[2];
            for (int half = 0; half < 2; half++) {
                int64_t row = i + 8 * half;
                const double* wr = w != NULL ? w + row : NULL;
                g[half] = skb_weighted8(_mm512_sub_pd(
                    _mm512_loadu_pd(m + row), _mm512_loadu_pd(y + row)), wr);
                h[half] = skb_weighted8(one, wr);
            }
            __m512 g16 = skb_joined16(g[0], g[1]);
            __m512 h16 = skb_joined16(h[0], h[1]);
            _mm512_storeu_ps(pairs + 2 * i,
                             _mm512_permutex2var_ps(g16, first, h16));
            _mm512_storeu_ps(pairs + 2 * i + 16,
                             _mm512_permutex2var_ps(g16, second, h16));
            skb_extremes_add(&x, g16, h16);
        }
        skb_extremes_store(&x, largest, nan, least);
        return done;
    }

    /* Whether the lanes give the running libm's bits: x over the main
       path's whole range (every table entry, both signs, the ends) */
    __attribute__((target("avx512f")))
    static int skb_exp_lanes_agree(void) {
        enum { CHECKED = 4096 };
        double x[CHECKED], lanes[CHECKED];
        uint64_t state = 0x9E3779B97F4A7C15ull;
        for (int i = 0; i < CHECKED; i++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            /* uniform in (-512, 512), a quarter of them small */
            double u = (double) (state >> 11) * 0x1p-53 * 2.0 - 1.0;
            x[i] = (i & 3) ? u * 511.9 : u * 0x1p-40;
        }
        skb_exp_lanes(x, lanes, CHECKED);
        for (int i = 0; i < CHECKED; i++) {
            double expected = exp(x[i]);
            if (lanes[i] == lanes[i]
                    && memcmp(&lanes[i], &expected, sizeof(double)) != 0)
                return 0;
        }
        return 1;
    }

    static int skb_exp_lanes_supported(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f");
    }
    static int skb_vector_exp_init(void) {
        return skb_exp_lanes_supported() && skb_exp_lanes_agree();
    }
    #else
    static void skb_exp_lanes(const double* x, double* out, int64_t n) {
        for (int64_t i = 0; i < n; i++)
            out[i] = NAN;
    }
    static int64_t skb_sigmoid_lanes(const double* m, double* p, int64_t n) {
        for (int64_t i = 0; i < n; i++)
            p[i] = NAN;
        return n;
    }
    #define SKB_LOGISTIC_PAIRS_NONE(SUFFIX, LABEL)                             \
    static int64_t skb_logistic_pairs_##SUFFIX(                                \
            const double* p, const LABEL* y, const double* w, double at_least, \
            float* pairs, int64_t n, float* largest, uint8_t* nan,             \
            float* least) {                                                    \
        largest[0] = largest[1] = 0.0f;                                        \
        nan[0] = nan[1] = 0;                                                   \
        least[0] = INFINITY;                                                   \
        return 0;                                                              \
    }
    SKB_LOGISTIC_PAIRS_NONE(u8, uint8_t)
    SKB_LOGISTIC_PAIRS_NONE(f32, float)
    SKB_LOGISTIC_PAIRS_NONE(f64, double)
    static int64_t skb_squared_pairs(const double* m, const double* y,
                                     const double* w, float* pairs,
                                     int64_t n, float* largest,
                                     uint8_t* nan, float* least) {
        largest[0] = largest[1] = 0.0f;
        nan[0] = nan[1] = 0;
        least[0] = INFINITY;
        return 0;
    }
    static int skb_exp_lanes_supported(void) { return 0; }
    static int skb_vector_exp_init(void) { return 0; }
    #endif
    """
    void exp_lanes "skb_exp_lanes"(const double* x, double* out,
                                   int64_t n) noexcept nogil
    int64_t sigmoid_lanes "skb_sigmoid_lanes"(const double* m, double* p,
                                              int64_t n) noexcept nogil
    int64_t logistic_pairs_u8 "skb_logistic_pairs_u8"(
        const double* p, const uint8_t* y, const double* w, double at_least,
        float* pairs, int64_t n, float* largest, uint8_t* nan,
        float* least) noexcept nogil
    int64_t logistic_pairs_f32 "skb_logistic_pairs_f32"(
        const double* p, const float* y, const double* w, double at_least,
        float* pairs, int64_t n, float* largest, uint8_t* nan,
        float* least) noexcept nogil
    int64_t logistic_pairs_f64 "skb_logistic_pairs_f64"(
        const double* p, const double* y, const double* w, double at_least,
        float* pairs, int64_t n, float* largest, uint8_t* nan,
        float* least) noexcept nogil
    int64_t squared_pairs "skb_squared_pairs"(
        const double* m, const double* y, const double* w, float* pairs,
        int64_t n, float* largest, uint8_t* nan, float* least) noexcept nogil
    int exp_lanes_supported "skb_exp_lanes_supported"() noexcept nogil
    int vector_exp_init "skb_vector_exp_init"() noexcept nogil


# Whether the logistic kernel takes its exponentials eight at a time
# (sigmoid_lanes), and the logistic and squared-error kernels their pairs
# sixteen at a time: the CPU has AVX-512 and the lanes agree with the
# running libm (set_vector_exp turns them off, for tests of the scalar
# loops).
cdef bint _vector_exp = vector_exp_init()


def set_vector_exp(bint enabled):
    """Take the logistic kernel's exponentials eight at a time, and the
    logistic and squared-error pairs sixteen at a time, where the CPU and
    the libm allow (True, the default), or one at a time (the
    exponentials from libm); returns the previous setting. The same bits
    either way."""
    global _vector_exp
    previous = _vector_exp
    _vector_exp = enabled and vector_exp_init()
    return previous


def _exp_lanes(const double[::1] x not None):
    """``exp(x)`` by the lanes of the vector path, NaN where they leave
    the value to libm (and everywhere without the vector path): for tests
    against libm's exp."""
    out = np.empty(x.shape[0], dtype=np.float64)
    cdef double[::1] values = out
    if not exp_lanes_supported():
        out.fill(np.nan)
    elif x.shape[0]:
        exp_lanes(&x[0], &values[0], x.shape[0])
    return out


cdef enum:
    # A row's gradient pair (an exp or a log, a division) counts as this
    # many units of work (skboost/_parallel.pxd).
    ELEMENTWISE_WORK = 8
    # values per block of largest_magnitude (a block's maximum each)
    MAGNITUDE_BLOCK = 65536


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_pairs(width):
    if width != 2:
        raise ValueError("gpair must hold (gradient, hessian) pairs: last "
                         f"axis of length 2, got {width}")


@cython.boundscheck(True)
@cython.wraparound(True)
def _check(n, *arrays):
    for a in arrays:
        if a is not None and a.shape[0] != n:
            raise ValueError("all per-row arrays must have the same length")


def squared_error_gradient(const double[::1] y not None,        # IN (n,)
                           const double[::1] raw not None,      # IN (n,)
                           const double[::1] weight,   # IN (n,)
                           float[:, ::1] gpair not None,        # OUT (n, 2)
                           int n_threads):
    """Squared-error pairs ``g = m - y``, ``h = 1``, times ``weight``,
    into ``gpair`` (n_rows, 2). Returns ``pair_magnitudes(gpair,
    least_hessian=True)`` of the pairs written, taken as they are written
    (the round's gradient check needs no pass of its own): sixteen rows at
    a time in AVX-512 registers with the vector path (``set_vector_exp``),
    the rest one by one; the same bits either way."""
    n_threads = check_n_threads(n_threads)
    _check(y.shape[0], raw, weight, gpair)
    _check_pairs(gpair.shape[1])
    cdef const double* w = weight_pointer(weight)
    cdef Py_ssize_t n = y.shape[0]
    chunk_max, chunk_nan, chunk_least = _extremes_arrays(n, PAIR_CHUNK)
    cdef float[:, ::1] maxima = chunk_max
    cdef uint8_t[:, ::1] nans = chunk_nan
    cdef float[::1] leasts = chunk_least
    cdef bint lanes = _vector_exp
    cdef Py_ssize_t chunk, start, stop, i, done
    for chunk in prange(leasts.shape[0], nogil=True, schedule="static",
                        num_threads=threads_for_work(n_threads, 2 * n)):
        start = chunk * PAIR_CHUNK
        stop = min(start + PAIR_CHUNK, n)
        done = 0
        if lanes:
            done = squared_pairs(&raw[start], &y[start],
                                 w + start if w != NULL else NULL,
                                 &gpair[start, 0], stop - start,
                                 &maxima[chunk, 0], &nans[chunk, 0],
                                 &leasts[chunk])
        else:
            _no_extremes(&maxima[chunk, 0], &nans[chunk, 0], &leasts[chunk])
        for i in range(start + done, stop):
            gpair[i, 0] = <float> times_weight(raw[i] - y[i], w, i)
            gpair[i, 1] = <float> times_weight(1.0, w, i)
        _add_tail_extremes(gpair, start + done, stop, &maxima[chunk, 0],
                           &nans[chunk, 0], &leasts[chunk])
    return _blocks_combined(chunk_max, chunk_nan) + (
        float(chunk_least.min(initial=INFINITY)),)


def logistic_gradient(const label_t[::1] y not None,
                      const double[::1] raw not None,
                      const double[::1] weight,
                      float[:, ::1] gpair not None,
                      int n_threads):
    """Logistic pairs of margins ``raw`` and labels ``y`` (module
    docstring), times ``weight``, into ``gpair`` (n_rows, 2). Returns
    ``pair_magnitudes(gpair, least_hessian=True)`` of the pairs written,
    taken while they are in cache (the round's gradient check needs no
    pass of its own)."""
    n_threads = check_n_threads(n_threads)
    _check(y.shape[0], raw, weight, gpair)
    _check_pairs(gpair.shape[1])
    cdef Py_ssize_t n = y.shape[0]
    chunk_max, chunk_nan, chunk_least = _extremes_arrays(n, SIGMOID_CHUNK)
    cdef float[:, ::1] maxima = chunk_max
    cdef uint8_t[:, ::1] nans = chunk_nan
    cdef float[::1] leasts = chunk_least
    if _logistic_by_chunks(y, raw, weight_pointer(weight), gpair,
                           maxima, nans, leasts,
                           threads_for_work(n_threads,
                                            ELEMENTWISE_WORK * n),
                           _vector_exp):
        raise MemoryError("no memory for a chunk of probabilities")
    return _blocks_combined(chunk_max, chunk_nan) + (
        float(chunk_least.min(initial=INFINITY)),)


cdef inline void logistic_pair(float[:, ::1] gpair, Py_ssize_t i, double p,
                               double label, const double* w) noexcept nogil:
    """Row i's pair from its probability ``p``: ``g = p - y``,
    ``h = max(p (1 - p), eps)``, times the weight."""
    gpair[i, 0] = <float> times_weight(p - label, w, i)
    gpair[i, 1] = <float> times_weight(floored_hessian(p * (1.0 - p)), w, i)


cdef enum:
    # rows of a chunk of the squared-error pairs, whose extremes are kept
    # per chunk (a 16 KB block of pairs: their extremes while in L1)
    PAIR_CHUNK = 2048
    # rows a thread's sigmoid_lanes takes at a time (its probabilities,
    # 8 KB, and its pairs stay in L1 for the pairs' loop and their
    # extremes)
    SIGMOID_CHUNK = 1024


cdef int _logistic_by_chunks(const label_t[::1] y, const double[::1] raw,
                             const double* w, float[:, ::1] gpair,
                             float[:, ::1] chunk_max,
                             uint8_t[:, ::1] chunk_nan,
                             float[::1] chunk_least,
                             int threads, bint lanes) except -1:
    """logistic_gradient by chunks of rows (``_logistic_chunk``), split
    statically among threads, each chunk's extremes into its row of
    chunk_max, chunk_nan, chunk_least. Returns 1 when out of memory."""
    cdef Py_ssize_t n = y.shape[0]
    cdef Py_ssize_t chunk, start
    cdef double* probabilities = NULL
    cdef int out_of_memory = 0
    with nogil, parallel(num_threads=threads):
        probabilities = <double*> malloc(SIGMOID_CHUNK * sizeof(double))
        for chunk in prange(chunk_least.shape[0], schedule="static"):
            if probabilities == NULL:
                out_of_memory = 1
                continue
            start = chunk * SIGMOID_CHUNK
            _logistic_chunk(y, raw, w, gpair, start,
                            min(start + SIGMOID_CHUNK, n), probabilities,
                            lanes, &chunk_max[chunk, 0], &chunk_nan[chunk, 0],
                            &chunk_least[chunk])
        free(probabilities)
    return out_of_memory


cdef inline void _logistic_chunk(const label_t[::1] y, const double[::1] raw,
                                 const double* w, float[:, ::1] gpair,
                                 Py_ssize_t start, Py_ssize_t stop,
                                 double* probabilities, bint lanes,
                                 float* largest, uint8_t* nan,
                                 float* least) noexcept nogil:
    """The pairs of rows ``start .. stop - 1`` and their extremes
    (pair_extremes' outputs). With ``lanes``: the sigmoids eight at a time
    (sigmoid_lanes), libm's sigmoid for the rows the lanes leave
    (|m| < 2^-54, |m| >= 512, NaN), then the pairs and their extremes
    sixteen rows at a time (``_vector_pairs``). One row at a time for
    the rest, or every row without ``lanes``. The same bits either way."""
    cdef Py_ssize_t i, done = 0
    cdef double p
    if lanes:
        if sigmoid_lanes(&raw[start], probabilities, stop - start):
            for i in range(start, stop):   # the rows left to libm's exp
                if probabilities[i - start] != probabilities[i - start]:
                    probabilities[i - start] = sigmoid(raw[i])
        done = _vector_pairs(y, probabilities, w, gpair, start, stop,
                             largest, nan, least)
    else:
        _no_extremes(largest, nan, least)
    for i in range(start + done, stop):
        p = probabilities[i - start] if lanes else sigmoid(raw[i])
        logistic_pair(gpair, i, p, y[i], w)
    _add_tail_extremes(gpair, start + done, stop, largest, nan, least)


cdef inline void _no_extremes(float* largest, uint8_t* nan,
                              float* least) noexcept nogil:
    """pair_extremes' outputs for no pair."""
    largest[0] = largest[1] = 0.0
    nan[0] = nan[1] = 0
    least[0] = INFINITY


cdef inline void _add_tail_extremes(float[:, ::1] gpair, Py_ssize_t first,
                                    Py_ssize_t stop, float* largest,
                                    uint8_t* nan, float* least) noexcept nogil:
    """pair_extremes' outputs updated with the pairs of rows ``first ..
    stop - 1`` (those the vector steps left), by pair_extremes' own rules
    (maxima and minima are exact, in any order)."""
    cdef float tail_largest[2]
    cdef uint8_t tail_nan[2]
    cdef float tail_least
    cdef int c
    if first == stop:
        return
    pair_extremes(&gpair[first, 0], stop - first, tail_largest, tail_nan,
                  &tail_least)
    for c in range(2):
        largest[c] = (tail_largest[c] if tail_largest[c] > largest[c]
                      else largest[c])
        nan[c] = nan[c] | tail_nan[c]
    least[0] = tail_least if tail_least < least[0] else least[0]


cdef inline Py_ssize_t _vector_pairs(const label_t[::1] y,
                                     const double* probabilities,
                                     const double* w, float[:, ::1] gpair,
                                     Py_ssize_t start, Py_ssize_t stop,
                                     float* largest, uint8_t* nan,
                                     float* least) noexcept nogil:
    """logistic_pairs_* of the label type on rows ``start .. stop - 1``
    (probabilities from ``start``): the rows done (a multiple of 16)."""
    cdef const double* row_weight = w + start if w != NULL else NULL
    if label_t is uint8_t:
        return logistic_pairs_u8(probabilities, &y[start], row_weight,
                                 HESSIAN_FLOOR, &gpair[start, 0],
                                 stop - start, largest, nan, least)
    elif label_t is float:
        return logistic_pairs_f32(probabilities, &y[start], row_weight,
                                  HESSIAN_FLOOR, &gpair[start, 0],
                                  stop - start, largest, nan, least)
    else:
        return logistic_pairs_f64(probabilities, &y[start], row_weight,
                                  HESSIAN_FLOOR, &gpair[start, 0],
                                  stop - start, largest, nan, least)


def softmax_gradient(const int32_t[::1] y not None,         # IN (n,) class index
                     const double[:, ::1] raw not None,     # IN (n, K)
                     const double[::1] weight,     # IN (n,)
                     float[:, :, ::1] gpair not None,       # OUT (K, n, 2)
                     int n_threads):
    n_threads = check_n_threads(n_threads)
    cdef Py_ssize_t n = y.shape[0], K = raw.shape[1]
    _check(n, raw, weight)
    _check_pairs(gpair.shape[2])
    cdef const double* w = weight_pointer(weight)
    if gpair.shape[0] != K or gpair.shape[1] != n:
        raise ValueError("gpair must be (n_classes, n_rows, 2)")
    labels = np.asarray(y)
    if n and (labels.min() < 0 or labels.max() >= K):
        raise ValueError("class index outside [0, n_classes)")
    cdef Py_ssize_t i, k
    cdef double top, total, p, curvature
    cdef double* shifted = NULL   # exp(raw[i, k] - top), one row, per thread
    cdef int out_of_memory = 0
    # gpair is (K, n, 2): each class's pairs contiguous, as its tree's
    # histogram builder reads them
    with nogil, parallel(num_threads=threads_for_work(
            n_threads, ELEMENTWISE_WORK * n * K)):
        shifted = <double*> malloc(K * sizeof(double))
        for i in prange(n, schedule="static"):
            if shifted == NULL:
                out_of_memory = 1
                continue
            # the row's largest margin subtracted first: every exp(.) is
            # <= 1, so no overflow, and the probabilities are unchanged
            top = raw[i, 0]
            for k in range(1, K):
                top = fmax(top, raw[i, k])
            total = 0.0
            for k in range(K):   # each exponential once (they are K per row)
                shifted[k] = exp(raw[i, k] - top)
                total = total + shifted[k]
            for k in range(K):
                p = shifted[k] / total
                gpair[k, i, 0] = <float> times_weight(p - (k == y[i]), w, i)
                curvature = 2.0 * p * (1.0 - p)
                # fmax(curvature, HESSIAN_FLOOR), inline (the floor for NaN)
                gpair[k, i, 1] = <float> times_weight(
                    curvature if curvature > HESSIAN_FLOOR
                    else HESSIAN_FLOOR, w, i)
        free(shifted)
    if out_of_memory:
        raise MemoryError("no memory for a row of class probabilities")


# --------------------------------------------------------------------------
# Element-wise objectives: one kernel, the loss picked by a code. Each case
# writes the (unweighted) derivatives of the loss ``l(y, m)`` in the margin
# ``m``; ``param`` is the objective's parameter (huber_slope, quantile alpha,
# max_delta_step of poisson, tweedie_variance_power) and unused otherwise.
# --------------------------------------------------------------------------

cdef enum ElementwiseLoss:
    LOSS_SQUARED_LOG_ERROR = 1  # l = 1/2 (log1p(m) - log1p(y))^2, m > -1
    LOSS_PSEUDO_HUBER_ERROR = 2  # l = s^2 (sqrt(1 + ((m - y)/s)^2) - 1)
    LOSS_ABSOLUTE_ERROR = 3  # l = |m - y|; h = 1 (leaves re-fitted)
    LOSS_QUANTILE_ERROR = 4  # pinball loss at alpha; h = 1 (leaves re-fitted)
    LOSS_HINGE = 5  # l = max(0, 1 - (2y - 1) m); h = 1 on the margin
    LOSS_POISSON = 6  # l = exp(m) - y m; h = exp(m + max_delta_step)
    LOSS_GAMMA = 7  # l = y exp(-m) + m
    LOSS_TWEEDIE = 8  # l = -y e^{(1-r)m}/(1-r) + e^{(2-r)m}/(2-r)
    LOSS_SQUARED_ERROR = 9  # l = 1/2 (m - y)^2
    LOSS_LOGISTIC = 10  # l = log(1 + e^m) - y m

# The codes, for Python callers of elementwise_gradient.
LOSS_CODES = {
    "squared_log_error": LOSS_SQUARED_LOG_ERROR,
    "pseudo_huber_error": LOSS_PSEUDO_HUBER_ERROR,
    "absolute_error": LOSS_ABSOLUTE_ERROR,
    "quantile_error": LOSS_QUANTILE_ERROR,
    "hinge": LOSS_HINGE,
    "poisson": LOSS_POISSON,
    "gamma": LOSS_GAMMA,
    "tweedie": LOSS_TWEEDIE,
    "squared_error": LOSS_SQUARED_ERROR,
    "logistic": LOSS_LOGISTIC,
}

# hinge outside the margin: a positive hessian too small to matter (the
# smallest normal float32, so it survives the cast to the float32 pair)
cdef double HINGE_FLAT_HESSIAN = 1.1754943508222875e-38  # FLT_MIN
# the squared log error's hessian (1 - r) / (m + 1)^2 turns negative for
# r > 1: floored, as XGBoost does
cdef double SQUARED_LOG_HESSIAN_FLOOR = 1e-6


cdef struct GradientPair:
    double g
    double h


cdef inline GradientPair elementwise_pair(int loss, double y, double m,
                                          double param) noexcept nogil:
    cdef double r, z, p, sign
    cdef GradientPair out
    # inlined into the one prange loop of elementwise_gradient: the loss
    # code is the same for every row, so this chain of tests is perfectly
    # predicted and costs next to nothing against the exp and log
    if loss == LOSS_SQUARED_LOG_ERROR:
        r = log1p(m) - log1p(y)
        out.g = r / (m + 1.0)
        out.h = fmax((1.0 - r) / ((m + 1.0) * (m + 1.0)),
                    SQUARED_LOG_HESSIAN_FLOOR)
    elif loss == LOSS_PSEUDO_HUBER_ERROR:
        r = (m - y) / param
        z = sqrt(1.0 + r * r)
        out.g = (m - y) / z
        out.h = 1.0 / (z * z * z)
    elif loss == LOSS_ABSOLUTE_ERROR:
        out.g = (m > y) - (m < y)
        out.h = 1.0
    elif loss == LOSS_QUANTILE_ERROR:
        # a row on its prediction (y == m) counts as above it, 1 - alpha, as
        # XGBoost and LightGBM: at the first round, whose margin is a label
        # quantile, that decides whether any split has a gain
        out.g = -param if y > m else 1.0 - param
        out.h = 1.0
    elif loss == LOSS_HINGE:
        sign = 2.0 * y - 1.0
        if sign * m < 1.0:
            out.g = -sign
            out.h = 1.0
        else:
            out.g = 0.0
            out.h = HINGE_FLAT_HESSIAN
    elif loss == LOSS_POISSON:
        out.g = exp(m) - y
        out.h = exp(m + param)
    elif loss == LOSS_GAMMA:
        out.g = 1.0 - y * exp(-m)
        out.h = y * exp(-m)
    elif loss == LOSS_TWEEDIE:
        out.g = -y * exp((1.0 - param) * m) + exp((2.0 - param) * m)
        out.h = (-y * (1.0 - param) * exp((1.0 - param) * m)
                + (2.0 - param) * exp((2.0 - param) * m))
    elif loss == LOSS_SQUARED_ERROR:
        out.g = m - y
        out.h = 1.0
    else:  # LOGISTIC
        p = sigmoid(m)
        out.g = p - y
        out.h = fmax(p * (1.0 - p), HESSIAN_FLOOR)
    return out


def elementwise_gradient(const double[::1] y not None,        # IN (n,)
                         const double[::1] raw not None,      # IN (n,)
                         const double[::1] weight,   # IN (n,)
                         float[:, ::1] gpair not None,        # OUT (n, 2)
                         *, int loss, double param, int n_threads):
    """Gradient pairs of the element-wise loss ``loss`` (a code of
    ``LOSS_CODES``) with parameter ``param``, multiplied by ``weight``.
    After the arrays, keyword-only."""
    n_threads = check_n_threads(n_threads)
    if not LOSS_SQUARED_LOG_ERROR <= loss <= LOSS_LOGISTIC:
        raise ValueError(f"unknown element-wise loss code {loss}")
    _check(y.shape[0], raw, weight, gpair)
    _check_pairs(gpair.shape[1])
    cdef const double* w = weight_pointer(weight)
    cdef Py_ssize_t i
    cdef GradientPair pair
    for i in prange(y.shape[0], nogil=True, schedule="static",
                    num_threads=threads_for_work(n_threads,
                                                 ELEMENTWISE_WORK * y.shape[0])):
        pair = elementwise_pair(loss, y[i], raw[i], param)
        gpair[i, 0] = <float> times_weight(pair.g, w, i)
        gpair[i, 1] = <float> times_weight(pair.h, w, i)


def pair_magnitudes(const float[:, ::1] gpair not None, int n_threads, *,
                    bint least_hessian=False):
    """``max |g|`` and ``max |h|`` of gradient pairs ``gpair`` (n_rows, 2),
    each a float, NaN when one of its column is NaN (0.0 for no row): the
    round's gradient check (``limits.check_gradients``) in one parallel
    pass, whose maxima the histogram finders' fixed-point scales take
    (``FixedPointGradients``) instead of a pass of their own. Blocks of
    rows keep their own maxima and NaN flags; maxima of maxima are exact,
    so the result does not depend on the threads.

    With ``least_hessian``, a third float: the least h (signed; +inf for
    no row, meaningless when h holds a NaN), which tells the histogram
    finders whether every fixed-point hessian is positive
    (``FixedPointGradients.hessians_positive``) without another pass."""
    n_threads = check_n_threads(n_threads)
    _check_pairs(gpair.shape[1])
    cdef Py_ssize_t n = gpair.shape[0]
    block_max, block_nan, block_least = _extremes_arrays(n, MAGNITUDE_BLOCK)
    cdef Py_ssize_t n_blocks = block_least.shape[0]
    cdef float[:, ::1] maxima = block_max
    cdef uint8_t[:, ::1] nans = block_nan
    cdef float[::1] leasts = block_least
    cdef Py_ssize_t block, start
    for block in prange(n_blocks, nogil=True, schedule="static",
                        num_threads=threads_for_work(n_threads, 2 * n)):
        start = block * MAGNITUDE_BLOCK
        pair_extremes(&gpair[start, 0], min(MAGNITUDE_BLOCK, n - start),
                      &maxima[block, 0], &nans[block, 0], &leasts[block])
    found = _blocks_combined(block_max, block_nan)
    if least_hessian:
        # the least of the blocks' leasts: exact, whatever the threads
        return found + (float(block_least.min(initial=INFINITY)),)
    return found


cdef inline void pair_extremes(const float* pairs,     # IN (n, 2)
                               Py_ssize_t n,
                               float* largest,         # OUT (2,)
                               uint8_t* nan,           # OUT (2,)
                               float* least) noexcept nogil:
    """``max |g|``, ``max |h|`` (``largest``; 0 for no pair), whether
    either holds a NaN (``nan``), and the least h (signed; +inf for no
    pair) of ``n`` (g, h) pairs."""
    cdef float largest_g = 0.0, largest_h = 0.0, least_h = INFINITY
    cdef float g, h
    cdef uint8_t nan_g = 0, nan_h = 0
    cdef Py_ssize_t i
    for i in range(n):
        g = fabsf(pairs[2 * i])
        h = fabsf(pairs[2 * i + 1])
        nan_g = nan_g | (g != g)
        nan_h = nan_h | (h != h)
        largest_g = g if g > largest_g else largest_g
        largest_h = h if h > largest_h else largest_h
        least_h = pairs[2 * i + 1] if pairs[2 * i + 1] < least_h else least_h
    largest[0] = largest_g
    largest[1] = largest_h
    nan[0] = nan_g
    nan[1] = nan_h
    least[0] = least_h


def _extremes_arrays(Py_ssize_t n, Py_ssize_t rows_per_block):
    """Where pair_extremes writes the extremes of n rows' pairs, a block of
    ``rows_per_block`` rows a row: maxima (n_blocks, 2) float32, NaN flags
    (n_blocks, 2) uint8, least hessians (n_blocks,) float32."""
    n_blocks = (n + rows_per_block - 1) // rows_per_block
    return (np.zeros((n_blocks, 2), dtype=np.float32),
            np.zeros((n_blocks, 2), dtype=np.uint8),
            np.empty(n_blocks, dtype=np.float32))


def _blocks_combined(block_max, block_nan):
    """``pair_magnitudes``' (max |g|, max |h|) from its blocks' maxima and
    NaN flags: the maxima of the maxima (exact), NaN where a block saw
    one, 0.0 for no block."""
    column_nan = block_nan.any(axis=0)
    column_max = block_max.max(axis=0, initial=0.0)
    return tuple(float("nan") if column_nan[c] else float(column_max[c])
                 for c in range(2))


def largest_magnitude(const float[::1] values not None, int n_threads):
    """``max |values|`` as a float, NaN when one of them is NaN (0.0 for
    none): the bound of a round's gradient check (``limits.check_gradients``)
    in one parallel pass, where ``np.max`` and ``np.min`` took two. Each
    block of values keeps its own maximum and NaN flag; the maximum of
    the maxima is exact, so the result does not depend on the threads."""
    n_threads = check_n_threads(n_threads)
    cdef Py_ssize_t n = values.shape[0]
    cdef Py_ssize_t n_blocks = (n + MAGNITUDE_BLOCK - 1) // MAGNITUDE_BLOCK
    if n_blocks == 0:
        return 0.0
    block_max = np.zeros(n_blocks, dtype=np.float32)
    block_nan = np.zeros(n_blocks, dtype=np.uint8)
    cdef float[::1] maxima = block_max
    cdef uint8_t[::1] nans = block_nan
    cdef Py_ssize_t block, i
    cdef float largest, magnitude
    cdef uint8_t nan
    for block in prange(n_blocks, nogil=True, schedule="static",
                        num_threads=threads_for_work(n_threads, n)):
        largest = 0.0
        nan = 0
        for i in range(block * MAGNITUDE_BLOCK,
                       min((block + 1) * MAGNITUDE_BLOCK, n)):
            magnitude = fabsf(values[i])
            nan = nan | (magnitude != magnitude)
            largest = magnitude if magnitude > largest else largest
        maxima[block] = largest
        nans[block] = nan
    if block_nan.any():
        return float("nan")
    return float(block_max.max())
