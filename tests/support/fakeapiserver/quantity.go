package main

import (
	"errors"
	"math/big"
	"strconv"
	"strings"
)

// A port of the parsing and canonical printing of
// k8s.io/apimachinery/pkg/api/resource.Quantity (math/big instead of inf.Dec),
// so that the fake stores and returns quantities exactly as the real server
// does after decoding and re-encoding them.

const (
	fmtDecimalExponent = "DecimalExponent"
	fmtBinarySI        = "BinarySI"
	fmtDecimalSI       = "DecimalSI"
)

var (
	errQuantityFormat  = errors.New("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
	errQuantityNumeric = errors.New("unable to parse numeric part of quantity")
	errQuantitySuffix  = errors.New("unable to parse quantity's suffix")
)

// quantity is unscaled * 10^exp10 in the given format. s, when set, is the
// original string, kept because it was already canonical.
type quantity struct {
	unscaled *big.Int
	exp10    int32
	format   string
	s        string
}

func parseQuantityString(str string) (positive bool, value, num, denom, suffix string, err error) {
	positive = true
	pos := 0
	end := len(str)
	if pos < end {
		switch str[0] {
		case '-':
			positive = false
			pos++
		case '+':
			pos++
		}
	}
Zeroes:
	for i := pos; ; i++ {
		if i >= end {
			num = "0"
			value = num
			return
		}
		switch str[i] {
		case '0':
			pos++
		default:
			break Zeroes
		}
	}
Num:
	for i := pos; ; i++ {
		if i >= end {
			num = str[pos:end]
			value = str[0:end]
			return
		}
		switch str[i] {
		case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		default:
			num = str[pos:i]
			pos = i
			break Num
		}
	}
	if len(num) == 0 {
		num = "0"
	}
	if pos < end && str[pos] == '.' {
		pos++
	Denom:
		for i := pos; ; i++ {
			if i >= end {
				denom = str[pos:end]
				value = str[0:end]
				return
			}
			switch str[i] {
			case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			default:
				denom = str[pos:i]
				pos = i
				break Denom
			}
		}
	}
	value = str[0:pos]
	suffixStart := pos
	for i := pos; ; i++ {
		if i >= end {
			suffix = str[suffixStart:end]
			return
		}
		if !strings.ContainsAny(str[i:i+1], "eEinumkKMGTP") {
			pos = i
			break
		}
	}
	if pos < end {
		switch str[pos] {
		case '-', '+':
			pos++
		}
	}
Suffix:
	for i := pos; ; i++ {
		if i >= end {
			suffix = str[suffixStart:end]
			return
		}
		switch str[i] {
		case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		default:
			break Suffix
		}
	}
	err = errQuantityFormat
	return
}

var (
	decSuffixes = map[string]int32{"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
	binSuffixes = map[string]int32{"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
)

func interpretSuffix(s string) (base, exponent int32, format string, ok bool) {
	if e, ok := decSuffixes[s]; ok {
		return 10, e, fmtDecimalSI, true
	}
	if e, ok := binSuffixes[s]; ok {
		return 2, e, fmtBinarySI, true
	}
	if len(s) > 1 && (s[0] == 'E' || s[0] == 'e') {
		parsed, err := strconv.ParseInt(s[1:], 10, 64)
		if err != nil {
			return 0, 0, fmtDecimalExponent, false
		}
		return 10, int32(parsed), fmtDecimalExponent, true
	}
	return 0, 0, fmtDecimalExponent, false
}

func int64Multiply(a, b int64) (int64, bool) {
	if a == 0 || b == 0 || a == 1 || b == 1 {
		return a * b, true
	}
	if a == -1<<63 || b == -1<<63 {
		return 0, false
	}
	c := a * b
	return c, c/b == a
}

var (
	bigTen      = big.NewInt(10)
	big1024     = big.NewInt(1024)
	maxAllowed  = big.NewInt(1<<63 - 1)
	nanoExp10   = int32(-9)
	maxI64Facts = int32(18)
)

func parseQuantity(str string) (quantity, error) {
	if len(str) == 0 {
		return quantity{}, errQuantityFormat
	}
	if str == "0" {
		return quantity{unscaled: new(big.Int), format: fmtDecimalSI, s: str}, nil
	}
	positive, value, num, denom, suf, err := parseQuantityString(str)
	if err != nil {
		return quantity{}, err
	}
	base, exponent, format, ok := interpretSuffix(suf)
	if !ok {
		return quantity{}, errQuantitySuffix
	}

	precision := int32(0)
	scale := int32(0)
	mantissa := int64(1)
	switch format {
	case fmtDecimalExponent, fmtDecimalSI:
		scale = exponent
		precision = maxI64Facts - int32(len(num)+len(denom))
	case fmtBinarySI:
		scale = 0
		switch {
		case exponent >= 0 && len(denom) == 0:
			mantissa = mantissa << uint64(exponent)
			precision = 15 - int32(len(num)) - int32(float32(exponent)*3/10) - 1
		default:
			precision = -1
		}
	}
	if precision >= 0 {
		scale -= int32(len(denom))
		if scale >= nanoExp10 {
			shifted := num + denom
			v, err := strconv.ParseInt(shifted, 10, 64)
			if err != nil {
				return quantity{}, errQuantityNumeric
			}
			if result, ok := int64Multiply(v, mantissa); ok {
				if !positive {
					result = -result
				}
				q := quantity{unscaled: big.NewInt(result), exp10: scale, format: format}
				switch format {
				case fmtBinarySI:
					if exponent%10 == 0 && (v&0x07 != 0) {
						q.s = str
					}
				default:
					if scale%3 == 0 && !strings.HasSuffix(shifted, "000") && shifted[0] != '0' {
						q.s = str
					}
				}
				return q, nil
			}
		}
	}

	// Slow path: arbitrary precision.
	amount, exp10, ok := parseDecimal(value)
	if !ok {
		return quantity{}, errQuantityNumeric
	}
	if base == 10 {
		exp10 += exponent
	} else if base == 2 {
		amount.Mul(amount, new(big.Int).Lsh(big.NewInt(1), uint(exponent)))
	}
	sign := amount.Sign()
	amount.Abs(amount)
	// Round non-zero values up (away from zero) to nano.
	if amount.Sign() != 0 && exp10 < nanoExp10 {
		div := new(big.Int).Exp(bigTen, big.NewInt(int64(nanoExp10-exp10)), nil)
		quo, rem := new(big.Int).QuoRem(amount, div, new(big.Int))
		if rem.Sign() != 0 {
			quo.Add(quo, big.NewInt(1))
		}
		amount, exp10 = quo, nanoExp10
	}
	if format == fmtBinarySI && cmpDec(amount, exp10, maxAllowed, 0) > 0 {
		amount, exp10 = new(big.Int).Set(maxAllowed), 0
	}
	if format == fmtBinarySI && amount.Sign() > 0 && cmpDec(amount, exp10, big.NewInt(1), 0) < 0 {
		format = fmtDecimalSI
	}
	if sign < 0 {
		amount.Neg(amount)
	}
	return quantity{unscaled: amount, exp10: exp10, format: format}, nil
}

// parseDecimal parses [+-]digits[.digits] into unscaled * 10^exp10.
func parseDecimal(s string) (*big.Int, int32, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	digits := intPart + frac
	if digits == "" {
		return nil, 0, false
	}
	v, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return nil, 0, false
	}
	if neg {
		v.Neg(v)
	}
	return v, -int32(len(frac)), true
}

// cmpDec compares a*10^ae with b*10^be.
func cmpDec(a *big.Int, ae int32, b *big.Int, be int32) int {
	x, y := new(big.Int).Set(a), new(big.Int).Set(b)
	if ae > be {
		x.Mul(x, new(big.Int).Exp(bigTen, big.NewInt(int64(ae-be)), nil))
	} else if be > ae {
		y.Mul(y, new(big.Int).Exp(bigTen, big.NewInt(int64(be-ae)), nil))
	}
	return x.Cmp(y)
}

func removeFactors(v *big.Int, f *big.Int) (*big.Int, int32) {
	v = new(big.Int).Set(v)
	times := int32(0)
	rem := new(big.Int)
	for v.Sign() != 0 {
		q, r := new(big.Int).QuoRem(v, f, rem)
		if r.Sign() != 0 {
			break
		}
		v = q
		times++
	}
	return v, times
}

// String returns the canonical form, as Quantity.String() does.
func (q quantity) String() string {
	if q.s != "" {
		return q.s
	}
	if q.unscaled == nil || q.unscaled.Sign() == 0 {
		return "0"
	}
	format := q.format
	var rounded *big.Int
	switch format {
	case fmtDecimalExponent, fmtDecimalSI:
	case fmtBinarySI:
		if cmpDec(q.unscaled, q.exp10, big.NewInt(-1024), 0) > 0 && cmpDec(q.unscaled, q.exp10, big.NewInt(1024), 0) < 0 {
			format = fmtDecimalSI
		} else {
			var exact bool
			if rounded, exact = q.asIntegerRoundUp(); !exact {
				format = fmtDecimalSI
			}
		}
	default:
		format = fmtDecimalExponent
	}
	switch format {
	case fmtDecimalExponent, fmtDecimalSI:
		amount, times := removeFactors(q.unscaled, bigTen)
		exponent := q.exp10 + times
		for exponent%3 != 0 {
			amount.Mul(amount, bigTen)
			exponent--
		}
		return amount.String() + decimalSuffix(exponent, format)
	default:
		amount, exponent := removeFactors(rounded, big1024)
		return amount.String() + binarySuffix(exponent*10)
	}
}

// asIntegerRoundUp rounds away from zero to an integer; exact reports no loss.
func (q quantity) asIntegerRoundUp() (*big.Int, bool) {
	if q.exp10 >= 0 {
		return new(big.Int).Mul(q.unscaled, new(big.Int).Exp(bigTen, big.NewInt(int64(q.exp10)), nil)), true
	}
	div := new(big.Int).Exp(bigTen, big.NewInt(int64(-q.exp10)), nil)
	abs := new(big.Int).Abs(q.unscaled)
	quo, rem := new(big.Int).QuoRem(abs, div, new(big.Int))
	exact := rem.Sign() == 0
	if !exact {
		quo.Add(quo, big.NewInt(1))
	}
	if q.unscaled.Sign() < 0 {
		quo.Neg(quo)
	}
	return quo, exact
}

func decimalSuffix(exponent int32, format string) string {
	if format == fmtDecimalSI {
		for s, e := range decSuffixes {
			if e == exponent {
				return s
			}
		}
	}
	if exponent == 0 {
		return ""
	}
	return "e" + strconv.FormatInt(int64(exponent), 10)
}

func binarySuffix(exponent int32) string {
	if exponent == 0 {
		return ""
	}
	for s, e := range binSuffixes {
		if e == exponent {
			return s
		}
	}
	return ""
}
