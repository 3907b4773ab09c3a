// Accurate f32 math for the kernels.
//
// Why: Vulkan only bounds exp/log to "3 + 2|x| ulp" (log: 2^-21 absolute near 1) and sin/cos to
// 2^-11 absolute, too loose for tests against a double reference at 1e-5 relative. So every
// transcendental function a kernel uses is built here from +, -, *, / and bit operations, which
// Vulkan rounds correctly (division within 2.5 ulp). No fma() either: Vulkan lets it round twice.
// Cody-Waite reductions and error-free transforms are marked `precise` (no contraction).
//
// Written in the common subset of GLSL and C++ (f-suffixed literals, no vectors, no out
// parameters) so that a host test can #include this file and check it against double precision.
// Polynomials: Chebyshev-node fits with f32 coefficients, rounded one at a time from the lowest
// degree and refitted (Horner order, highest degree first).

#define F_INF uintBitsToFloat(0x7f800000u)
#define F_NAN uintBitsToFloat(0x7fc00000u)

bool is_nan(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }  // immune to fast-math folding
float with_sign_of(float x, float s) {
  return uintBitsToFloat((floatBitsToUint(x) & 0x7fffffffu) | (floatBitsToUint(s) & 0x80000000u));
}
// The upper 12 significant bits of x: products of two such values are exact (Dekker split by masking).
float hi12(float x) { return uintBitsToFloat(floatBitsToUint(x) & 0xfffff000u); }
// 2^k for k in [-126, 127], built from bits (exact, unlike exp2()).
float pow2i(int k) { return uintBitsToFloat(uint(k + 127) << 23); }

// A value as an unevaluated sum hi + lo (|lo| <= ulp(hi)/2).
struct ff { float hi; float lo; };

// e^x, <= 2 ulp over the whole range (relative error ~1e-7).
float exp_p(float x) {
  if (is_nan(x)) return x;
  if (x > 88.7228394f) return F_INF;
  if (x < -103.972084f) return 0.0f;
  float k = roundEven(x * 1.44269502f);
  // x - k*ln2 with ln2 = C1 + C2: k*C1 is exact (C1 has 9 bits) and so is the subtraction.
  precise float r = x - k * 0.693359375f;
  r = r - k * -2.12194440e-4f;
  float e = (((((2.50163394e-05f * r + 1.99696689e-04f) * r + 1.38885714e-03f) * r + 8.33318010e-03f) * r
              + 4.16666679e-02f) * r + 1.66666672e-01f) * r + 0.5f;  // (e^r - 1 - r) / r^2
  float p = 1.0f + (r + (r * r) * e);
  int ki = int(k);
  if (ki > 127) return p * pow2i(127) * pow2i(ki - 127);
  if (ki < -126) return p * pow2i(ki + 126) * pow2i(-126);  // one rounding, into the subnormals
  return p * pow2i(ki);
}

// log(x) = hi + lo to ~2^-28 relative, for finite x > 0 (subnormals included).
ff log_ff(float x) {
  uint b = floatBitsToUint(x);
  int e = 0;
  if (b < 0x00800000u) { b = floatBitsToUint(x * 16777216.0f); e = -24; }
  e += int(b >> 23) - 127;
  float m = uintBitsToFloat((b & 0x007fffffu) | 0x3f800000u);  // [1, 2)
  if (m > 1.41421354f) { m = m * 0.5f; e += 1; }
  precise float f = m - 1.0f;  // exact (Sterbenz), in [-0.293, 0.415]
  // log1p(f) = f - f^2/2 + f^3 P(f); f^2/2 is split so that its leading part is exact.
  float fh = hi12(f);
  precise float fl = f - fh;
  precise float hsq = 0.5f * (fh * fh);
  precise float hi = f - hsq;
  precise float lo = (f - hi) - hsq;  // Fast2Sum error: |f| >= |hsq|
  float P = ((((((((((1.03452630e-01f * f - 9.67656542e-03f) * f - 1.19181700e-01f) * f + 1.16020039e-01f) * f
              - 9.78658721e-02f) * f + 1.08633749e-01f) * f - 1.25023395e-01f) * f + 1.42964527e-01f) * f
              - 1.66667700e-01f) * f + 1.99998066e-01f) * f - 2.49999985e-01f) * f + 3.33333343e-01f;
  lo = lo + ((f * f) * (f * P) - 0.5f * fl * (f + fh));
  // + e*ln2, ln2 = LN2_HI + LN2_LO with e*LN2_HI exact (LN2_HI has 15 bits).
  float fe = float(e);
  precise float a = fe * 0.693145752f;
  precise float s = a + hi;
  precise float bv = s - a;
  precise float err = (a - (s - bv)) + (hi - bv);  // TwoSum
  lo = lo + (err + fe * 1.42860677e-06f);
  precise float H = s + lo;
  precise float L = lo - (H - s);
  return ff(H, L);
}

float log_p(float x) {
  if (is_nan(x) || x < 0.0f) return F_NAN;
  if (x == 0.0f) return -F_INF;
  if (x == F_INF) return F_INF;
  return log_ff(x).hi;
}

// log(1 + u) without losing the low bits of u.
float log1p_p(float u) {
  if (is_nan(u) || u < -1.0f) return F_NAN;
  if (u == -1.0f) return -F_INF;
  if (u == F_INF) return F_INF;
  precise float w = 1.0f + u;
  if (w == 1.0f) return u;
  ff L = log_ff(w);
  precise float c = u - (w - 1.0f);  // rounding error of w
  return L.hi + (L.lo + c / w);     // log(w + c) ~ log(w) + c/w
}

// sin(x) (q_off = 0) or cos(x) (q_off = 1): quadrant reduction with pi/2 in three parts, accurate
// for |x| < ~6000 (beyond that the reduction slowly loses bits).
float sincos_p(float x, int q_off) {
  if (!(abs(x) < F_INF)) return F_NAN;
  float q = roundEven(x * 0.636619747f);
  precise float r = x - q * 1.5703125f;
  r = r - q * 4.83751297e-04f;
  r = r - q * 7.54979013e-08f;
  float z = r * r;
  float s = r + r * z * (((2.92177288e-06f * z - 1.98612950e-04f) * z + 8.33339710e-03f) * z - 1.66666672e-01f);
  float c = 1.0f - 0.5f * z + (z * z) * (((-3.21317913e-07f * z + 2.48527722e-05f) * z - 1.38890487e-03f) * z
                                         + 4.16666679e-02f);
  int quadrant = (int(q) + q_off) & 3;
  if (quadrant == 0) return s;
  if (quadrant == 1) return c;
  if (quadrant == 2) return -s;
  return -c;
}
float sin_p(float x) { return sincos_p(x, 0); }
float cos_p(float x) { return sincos_p(x, 1); }

float tanh_p(float x) {
  float a = abs(x);
  if (a < 0.625f) {  // the series form keeps full relative precision near 0
    float z = x * x;
    return x + x * z * ((((((-1.76299817e-03f * z + 4.44910582e-03f) * z - 9.34856758e-03f) * z + 2.19904147e-02f) * z
                          - 5.39824814e-02f) * z + 1.33334041e-01f) * z - 3.33333343e-01f);
  }
  return with_sign_of(1.0f - 2.0f / (exp_p(2.0f * a) + 1.0f), x);
}

// Stable for both signs: never forms 1 + e^|x|-sized terms that cancel.
float sigmoid_p(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + exp_p(-x));
  float e = exp_p(x);
  return e / (1.0f + e);
}

// erfc(a) for a >= 0.9, given a^2 = sq_hi + sq_lo: erfc(a) = exp(-a^2) * G(q) / (1 + 2a), with
// G = (1+2a) erfcx(a) a polynomial in q = (a-2)/(a+2) (Shepherd & Laframboise). exp(-a^2) is
// where precision goes (its relative error is |d(a^2)|), hence a^2 as an exact-ish sum.
float erfcx_big(float a) {  // erfcx(a) = exp(a^2) erfc(a), a >= 0.9
  float q = (a - 2.0f) / (a + 2.0f);
  float g = (((((((((((5.63062960e-03f * q - 9.88505874e-03f) * q + 3.27444798e-03f) * q + 3.08586750e-03f) * q
              - 3.43465386e-03f) * q + 8.65905546e-04f) * q + 9.07655433e-03f) * q - 8.01959541e-03f) * q
              - 5.42471744e-02f) * q + 1.64051399e-01f) * q - 1.66029528e-01f) * q - 9.27638337e-02f) * q
              + 1.27697837e+00f;
  return g / (1.0f + 2.0f * a);
}
float erfc_big_sq(float a, float sq_hi, float sq_lo) {
  if (a > 10.1f) return 0.0f;  // below the smallest subnormal (also a = inf)
  return erfcx_big(a) * (exp_p(-sq_hi) * exp_p(-sq_lo));
}
// x^2 = hi + lo with hi exact (12-bit split); lo carries the rest to ~2^-36 relative.
ff square_ff(float x) {
  float xh = hi12(x);
  precise float xl = x - xh;
  return ff(xh * xh, xl * (x + xh));
}
float erfc_big(float a) {
  ff sq = square_ff(a);
  return erfc_big_sq(a, sq.hi, sq.lo);
}
// erf(x)/x for |x| < 0.9, as a polynomial in x^2.
float erf_small_ratio(float z) {
  return ((((((-2.90488388e-04f * z + 9.65571031e-04f) * z - 1.88453996e-03f) * z + 5.86199854e-03f) * z
           - 2.70777587e-02f) * z + 1.12873927e-01f) * z - 3.76129091e-01f) * z + 1.12837923e+00f;
}
float erf_p(float x) {
  float a = abs(x);
  if (a < 0.9f) return x * erf_small_ratio(x * x);
  return with_sign_of(1.0f - erfc_big(a), x);  // NaN stays NaN
}
// erfc(x) with full relative precision also where it is tiny (x large).
float erfc_p(float x) {
  if (is_nan(x)) return x;
  if (abs(x) < 0.9f) return 1.0f - x * erf_small_ratio(x * x);
  return x > 0.0f ? erfc_big(x) : 2.0f - erfc_big(-x);
}

// x^s with C++ std::pow semantics for the special cases; the general case is exp(s * log|x|) with
// log in double-float, so the error stays ~2 ulp even for large results.
float pow_p(float x, float s) {
  if (s == 0.0f || x == 1.0f) return 1.0f;
  if (is_nan(x) || is_nan(s)) return F_NAN;
  float ax = abs(x);
  bool x_neg = (floatBitsToUint(x) >> 31) != 0u;
  bool s_int = floor(s) == s;
  bool s_odd = s_int && abs(s) < 16777216.0f && floor(s * 0.5f) != s * 0.5f;
  float sgn = (x_neg && s_odd) ? -1.0f : 1.0f;
  if (abs(s) == F_INF) {
    if (ax == 1.0f) return 1.0f;
    return ((ax > 1.0f) == (s > 0.0f)) ? F_INF : 0.0f;
  }
  if (ax == F_INF) return sgn * (s > 0.0f ? F_INF : 0.0f);
  if (ax == 0.0f) return sgn * (s > 0.0f ? 0.0f : F_INF);
  if (x_neg && !s_int) return F_NAN;
  if (s == 1.0f) return x;
  if (s == 2.0f) return x * x;
  if (s == 0.5f) return sqrt(x);
  if (s == -1.0f) return 1.0f / x;
  ff L = log_ff(ax);
  // s * (L.hi + L.lo) as Y + Yl, the leading product exact through 12-bit splits.
  float sh = hi12(s);
  precise float sl = s - sh;
  float lh = hi12(L.hi);
  precise float ll = L.hi - lh;
  precise float yh = sh * lh;
  precise float yl = ((sh * ll + sl * lh) + sl * ll) + s * L.lo;
  precise float Y = yh + yl;
  precise float Yl = yl - (Y - yh);
  float r = exp_p(Y);
  return sgn * (r + r * Yl);
}

// x - m as hi + lo (TwoSum); lo is 0 where hi is not finite (x or m infinite).
ff diff_ff(float x, float m) {
  precise float d = x - m;
  precise float bv = d - x;
  precise float err = (x - (d - bv)) + (-m - bv);
  return ff(d, is_nan(err) ? 0.0f : err);
}
// exp(x - m) without the rounding of x - m, which would cost up to |x - m| * 2^-24 relative.
float exp_diff(float x, float m) {
  ff d = diff_ff(x, m);
  float e = exp_p(d.hi);
  return e + e * d.lo;
}

// 0.5 x (1 + erf(x/sqrt2)) = 0.5 x erfc(-x/sqrt2); (x/sqrt2)^2 is formed from x so that the
// rounding of x/sqrt2 does not reach exp(-x^2/2) (it would cost 2u^2 ulp, 1e-5 at x = -13).
float gelu_p(float x) {
  float u = x * 0.707106781f;
  if (abs(u) < 0.9f) return 0.5f * x * (1.0f + u * erf_small_ratio(u * u));
  ff sq = square_ff(x);
  float c = erfc_big_sq(abs(u), 0.5f * sq.hi, 0.5f * sq.lo);
  return 0.5f * x * (u > 0.0f ? 2.0f - c : c);
}
// 0.5 x (1 + tanh(u)) = x * sigmoid(2u): no cancellation for negative x.
float gelu_tanh_p(float x) { return x * sigmoid_p(2.0f * (0.797884583f * (x + 0.044715f * (x * x * x)))); }
float silu_p(float x) { return x * sigmoid_p(x); }

// Derivatives of the activations (the EW_*_GRAD codes), accurate where the function is tiny.
// gelu'(x) = Phi(x) + x phi(x). For |x/sqrt2| >= 0.9 both terms share E = exp(-x^2/2), formed
// from the split square as in gelu_p: Phi(x) = E erfcx(|u|)/2 for x < 0, 1 - that for x > 0.
float gelu_grad_p(float x) {
  float u = x * 0.707106781f;
  if (abs(u) > 10.1f) return u > 0.0f ? 1.0f : 0.0f;  // within 3e-44 (subnormal) of the limits; also +-inf
  ff sq = square_ff(x);
  float e = exp_p(-0.5f * sq.hi) * exp_p(-0.5f * sq.lo);
  float x_pdf = x * (0.398942280f * e);
  if (abs(u) < 0.9f) return 0.5f * (1.0f + u * erf_small_ratio(u * u)) + x_pdf;
  float tail = 0.5f * erfcx_big(abs(u)) * e;  // Phi(-|x|)
  return u > 0.0f ? (1.0f - tail) + x_pdf : tail + x_pdf;
}
// d/dx x sigmoid(2z), z = k(x + 0.044715 x^3): s + 2x s (1-s) k (1 + 3*0.044715 x^2), s = sigmoid(2z);
// 1 - s is sigmoid(-2z), which keeps its precision where s is near 1.
float gelu_tanh_grad_p(float x) {
  float z2 = 2.0f * (0.797884583f * (x + 0.044715f * (x * x * x)));
  float s = sigmoid_p(z2);
  return s * (1.0f + 2.0f * x * sigmoid_p(-z2) * (0.797884583f * (1.0f + 0.134145f * (x * x))));
}
// silu'(x) = sigmoid(x) (1 + x (1 - sigmoid(x))), 1 - sigmoid(x) = sigmoid(-x).
float silu_grad_p(float x) { return sigmoid_p(x) * (1.0f + x * sigmoid_p(-x)); }
