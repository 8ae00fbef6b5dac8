package main

import "testing"

func TestQuantityCanonicalForm(t *testing.T) {
	cases := map[string]string{
		"1.5": "1500m", "1.5Gi": "1536Mi", "1024Mi": "1Gi", "1000": "1k", "100": "100",
		"1Gi": "1Gi", "0.1m": "100u", "1e3": "1e3", "1.5e3": "1500", "2000": "2k",
		"0": "0", "0Gi": "0", "-0": "0", "512Ki": "512Ki", "0.5Ki": "512", "1Ki": "1Ki",
		"1023": "1023", "8Ei": "9223372036854775807", "10Gi": "10Gi", "16Gi": "16Gi",
		"80G": "80G", "1000000": "1M", "1.2345": "1234500u", "0.9n": "1n", "5": "5",
		"+5": "+5", "1500m": "1500m", "2048": "2048", "12e6": "12e6", "40Gi": "40Gi",
		"81920Mi": "80Gi", "1E3": "1E3", "0.0000000001": "1n", "100m": "100m",
	}
	for in, want := range cases {
		q, err := parseQuantity(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := q.String(); got != want {
			t.Errorf("%q: got %q want %q", in, got, want)
		}
	}
	// Canonical string and an alternate spelling, from apimachinery's TestQuantityString
	// and TestQuantityParseEmit.
	pairs := [][2]string{
		{"1Gi", "1024Mi"}, {"300Mi", "307200Ki"}, {"1001Gi", "1025024Mi"}, {"1Ti", "1024Gi"},
		{"1G", "1000M"}, {"1G", "0.001T"}, {"1m", "1000u"}, {"1080m", "1.08"}, {"1080m", "1080000000n"},
		{"1e21", "1000E"}, {"5e21", "5000E"}, {"1e24", "1000000E"}, {"1e9", ".001e12"}, {"1e-3", "0.001e0"},
		{"1e-9", "1000e-12"}, {"0", "00"}, {"1024m", ".001Ki"}, {"1024u", ".000001Ki"},
		{"1024n", ".000000001Ki"}, {"2n", ".000000000001Ki"},
	}
	for _, p := range pairs {
		for _, in := range []string{p[0], p[1]} {
			q, err := parseQuantity(in)
			if err != nil {
				t.Errorf("%q: %v", in, err)
				continue
			}
			if got := q.String(); got != p[0] {
				t.Errorf("%q: got %q want %q", in, got, p[0])
			}
		}
	}
	for _, bad := range []string{"", "abc", "1Qi", "1.2.3", "1e", "--1", "1.1.M", "1+1.0M", "0.1mi", "0.1am",
		".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 "} {
		if _, err := parseQuantity(bad); err == nil {
			t.Errorf("%q: expected an error", bad)
		}
	}
}
