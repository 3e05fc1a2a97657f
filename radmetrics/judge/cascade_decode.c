/* One decode step's attention on a CPU, fp32: the keys of a shared prefix (one copy for the batch) and each row's
 * own filled keys, under one softmax, as radmetrics.judge.greedy_engine's `shared_prefix_attention` computes it with
 * matrix products (scores, softmax, probabilities x values). A row has one input, or its next input and its drafts
 * (`n_inputs`), input i seeing the row's columns up to its own (causal among the inputs).
 *
 * Why a kernel: at 96 rows the products' batched small matrices (2 query rows per KV head) ran at ~17 GB/s where a
 * plain read of the same keys runs at ~50 GB/s, and every library formulation measured (einsum, the CPU SDPA kernel,
 * torch.compile) stayed there (BENCHMARKS.md, sessions 30-33); this reads each key and value once per row, only the
 * columns the row has filled. Compiled and loaded by radmetrics/judge/cpu_attention.py; no Python or torch headers.
 *
 * Layout (element strides, so the engine's slot table is read in place):
 *   q       [batch, heads, n_inputs, dim] at element strides q_row, q_head, q_input (the last dimension contiguous);
 *           head h = KV head h / group; multiplied by `scale` here (as the products' path scales the query first)
 *   pk, pv  the prefix's keys/values [kv_heads, n_prefix, dim], contiguous (n_prefix may be 0)
 *   k, v    the slot table: row b, KV head h, column c at b*row_stride + h*head_stride + c*col_stride (+ j)
 *   first   [batch] int32: the row's first own column
 *   used    [batch, n_inputs] int32: how many columns from `first` input i reads (at most max_used, and first +
 *           used at most n_columns, the columns the table's view holds; at least 1 without a prefix)
 *   out     [batch, n_inputs, heads, dim], contiguous (what the attention modules take)
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* exp(x) for x <= 0 over an array, vectorisable: Cephes expf's range reduction and polynomial (~1 ulp) */
static inline void exp_nonpositive(float *x, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        float v = x[i] < -87.0f ? -87.0f : x[i];
        float r = (v * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
        float f = v - r * 0.693359375f + r * 2.12194440e-4f;
        float p = 1.9875691500E-4f;
        p = p * f + 1.3981999507E-3f;
        p = p * f + 8.3334519073E-3f;
        p = p * f + 4.1665795894E-2f;
        p = p * f + 1.6666665459E-1f;
        p = p * f + 5.0000001201E-1f;
        p = p * f * f + f + 1.0f;
        int32_t bits = ((int32_t)r + 127) << 23;
        float two_to_r;
        memcpy(&two_to_r, &bits, 4);
        x[i] = p * two_to_r;
    }
}

/* scores of two queries against n keys, stride apart: each key read once for both, four keys at a time (eight
   independent sums: the additions' latency overlaps) */
static inline void scores2(const float *q0, const float *q1, const float *keys, int64_t stride, int64_t n,
                           int64_t dim, float *s0, float *s1) {
    int64_t c = 0;
    for (; c + 4 <= n; c += 4) {
        const float *k0 = keys + c * stride, *k1 = k0 + stride, *k2 = k1 + stride, *k3 = k2 + stride;
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, b0 = 0.0f, b1 = 0.0f, b2 = 0.0f, b3 = 0.0f;
#pragma omp simd reduction(+ : a0, a1, a2, a3, b0, b1, b2, b3)
        for (int64_t j = 0; j < dim; j++) {
            float x = q0[j], y = q1[j];
            a0 += x * k0[j];
            a1 += x * k1[j];
            a2 += x * k2[j];
            a3 += x * k3[j];
            b0 += y * k0[j];
            b1 += y * k1[j];
            b2 += y * k2[j];
            b3 += y * k3[j];
        }
        s0[c] = a0, s0[c + 1] = a1, s0[c + 2] = a2, s0[c + 3] = a3;
        s1[c] = b0, s1[c + 1] = b1, s1[c + 2] = b2, s1[c + 3] = b3;
    }
    for (; c < n; c++) {
        const float *kc = keys + c * stride;
        float a0 = 0.0f, b0 = 0.0f;
#pragma omp simd reduction(+ : a0, b0)
        for (int64_t j = 0; j < dim; j++) {
            a0 += q0[j] * kc[j];
            b0 += q1[j] * kc[j];
        }
        s0[c] = a0;
        s1[c] = b0;
    }
}

static inline void scores1(const float *q0, const float *keys, int64_t stride, int64_t n, int64_t dim, float *s0) {
    for (int64_t c = 0; c < n; c++) {
        const float *kc = keys + c * stride;
        float a0 = 0.0f;
#pragma omp simd reduction(+ : a0)
        for (int64_t j = 0; j < dim; j++) a0 += q0[j] * kc[j];
        s0[c] = a0;
    }
}

static inline void values2(const float *p0, const float *p1, const float *vals, int64_t stride, int64_t n,
                           int64_t dim, float *o0, float *o1) {
    for (int64_t c = 0; c < n; c++) {
        const float *vc = vals + c * stride;
        float w0 = p0[c], w1 = p1[c];
#pragma omp simd
        for (int64_t j = 0; j < dim; j++) {
            o0[j] += w0 * vc[j];
            o1[j] += w1 * vc[j];
        }
    }
}

static inline void values1(const float *p0, const float *vals, int64_t stride, int64_t n, int64_t dim, float *o0) {
    for (int64_t c = 0; c < n; c++) {
        const float *vc = vals + c * stride;
        float w0 = p0[c];
#pragma omp simd
        for (int64_t j = 0; j < dim; j++) o0[j] += w0 * vc[j];
    }
}

/* returns 0; 1 when a scratch buffer could not be allocated; 2 when a row's columns lie outside the table's view or
   past max_used (which sizes the scratch buffers), or a row without a prefix would read no column (nothing is
   written then) */
int cascade_decode_attention(const float *q, int64_t q_row, int64_t q_head, int64_t q_input, float scale,
                             const float *pk, const float *pv, int64_t n_prefix, const float *k, const float *v,
                             int64_t row_stride, int64_t head_stride, int64_t col_stride, int64_t n_columns,
                             const int32_t *first, const int32_t *used, int64_t batch, int64_t kv_heads,
                             int64_t group, int64_t n_inputs, int64_t dim, int64_t max_used, int threads,
                             float *out) {
    for (int64_t b = 0; b < batch; b++) {
        if (first[b] < 0) return 2;
        for (int64_t i = 0; i < n_inputs; i++) {
            int64_t u = used[b * n_inputs + i];
            if (u < (n_prefix > 0 ? 0 : 1) || u > max_used || first[b] + u > n_columns) return 2;
        }
    }
    int failed = 0;
    int64_t queries = group * n_inputs, widest = n_prefix + (max_used > 0 ? max_used : 1);
#pragma omp parallel num_threads(threads) reduction(| : failed)
    {
        /* one row's scores (then probabilities), its scaled queries and its outputs, query x = g * n_inputs + i */
        float *s = malloc(sizeof(float) * queries * (widest + 2 * dim));
        if (s == NULL) failed = 1;
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < batch * kv_heads; bh++) {
            if (s == NULL) continue;
            int64_t b = bh / kv_heads, h = bh % kv_heads, n_own = 0;
            for (int64_t i = 0; i < n_inputs; i++)
                n_own = used[b * n_inputs + i] > n_own ? used[b * n_inputs + i] : n_own;
            int64_t n = n_prefix + n_own; /* scores for every query over the longest input's columns */
            const float *kb = k + b * row_stride + h * head_stride + (int64_t)first[b] * col_stride;
            const float *vb = v + b * row_stride + h * head_stride + (int64_t)first[b] * col_stride;
            const float *pkh = pk + h * n_prefix * dim, *pvh = pv + h * n_prefix * dim;
            float *qb = s + queries * widest, *o = qb + queries * dim;
            for (int64_t x = 0; x < queries; x++) {
                const float *qx = q + b * q_row + (h * group + x / n_inputs) * q_head + (x % n_inputs) * q_input;
#pragma omp simd
                for (int64_t j = 0; j < dim; j++) qb[x * dim + j] = qx[j] * scale;
            }
            int64_t x = 0;
            for (; x + 1 < queries; x += 2) {
                float *s0 = s + x * n, *s1 = s + (x + 1) * n;
                scores2(qb + x * dim, qb + (x + 1) * dim, pkh, dim, n_prefix, dim, s0, s1);
                scores2(qb + x * dim, qb + (x + 1) * dim, kb, col_stride, n_own, dim, s0 + n_prefix, s1 + n_prefix);
            }
            for (; x < queries; x++) {
                scores1(qb + x * dim, pkh, dim, n_prefix, dim, s + x * n);
                scores1(qb + x * dim, kb, col_stride, n_own, dim, s + x * n + n_prefix);
            }
            for (x = 0; x < queries; x++) { /* softmax over the prefix and the input's own columns together */
                int64_t seen = n_prefix + used[b * n_inputs + x % n_inputs];
                float *sx = s + x * n, top = sx[0], total = 0.0f;
#pragma omp simd reduction(max : top)
                for (int64_t c = 0; c < seen; c++) top = sx[c] > top ? sx[c] : top;
#pragma omp simd
                for (int64_t c = 0; c < seen; c++) sx[c] -= top;
                exp_nonpositive(sx, seen);
#pragma omp simd reduction(+ : total)
                for (int64_t c = 0; c < seen; c++) total += sx[c];
                float inverse = 1.0f / total;
#pragma omp simd
                for (int64_t c = 0; c < seen; c++) sx[c] *= inverse;
                for (int64_t c = seen; c < n; c++) sx[c] = 0.0f; /* a later input's columns: weight 0 */
            }
            memset(o, 0, sizeof(float) * queries * dim);
            for (x = 0; x + 1 < queries; x += 2) {
                float *s0 = s + x * n, *s1 = s + (x + 1) * n, *o0 = o + x * dim, *o1 = o + (x + 1) * dim;
                values2(s0, s1, pvh, dim, n_prefix, dim, o0, o1);
                values2(s0 + n_prefix, s1 + n_prefix, vb, col_stride, n_own, dim, o0, o1);
            }
            for (; x < queries; x++) {
                values1(s + x * n, pvh, dim, n_prefix, dim, o + x * dim);
                values1(s + x * n + n_prefix, vb, col_stride, n_own, dim, o + x * dim);
            }
            for (x = 0; x < queries; x++) /* to [batch, n_inputs, heads, dim] */
                memcpy(out + ((b * n_inputs + x % n_inputs) * kv_heads * group + h * group + x / n_inputs) * dim,
                       o + x * dim, sizeof(float) * dim);
        }
        free(s);
    }
    return failed;
}
