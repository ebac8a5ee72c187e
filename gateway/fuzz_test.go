package gateway

import "testing"

func FuzzJSON5(f *testing.F) {
	for _, s := range []string{`{a: 1, 'b': "x", c: [1, 2,], // c
}`, `{gateway: {port: 18789, auth: {token: "t"}}}`, `0x1F`, `+Infinity`, `"\u00e9\uD83D\uDE00"`, `[[[[[[[[`, `/* x */ null`, "{a:'\\\n'}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parseJSON5(s)
	})
}
