// Package suggest is agentctl's one did-you-mean: the nearest of some names to
// what the user typed, for mistyped commands, flags and adapter names alike.
// It imports nothing of the project, so agents/ (which imports nothing else of
// it) can use it too.
package suggest

// Closest returns the canonical name (the first) of the candidate whose names
// come nearest to typed, when it is near enough to be a plausible typo: within
// one edit per three letters (at least one), or typed (two letters or more) is
// a prefix of the names of exactly one candidate. Otherwise "".
func Closest(typed string, candidates [][]string) string {
	best, bestDist := "", 0
	var prefixed []string
	for _, names := range candidates {
		if len(names) == 0 {
			continue
		}
		hasPrefix := false
		for _, n := range names {
			if len(typed) >= 2 && len(n) > len(typed) && n[:len(typed)] == typed {
				hasPrefix = true
			}
			d := Distance(typed, n)
			if best == "" || d < bestDist {
				best, bestDist = names[0], d
			}
		}
		if hasPrefix {
			prefixed = append(prefixed, names[0])
		}
	}
	limit := max(1, len([]rune(typed))/3)
	if best != "" && bestDist <= limit {
		return best
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return ""
}

// Distance is the Levenshtein distance between a and b, counted in runes,
// with a transposition of two neighbours counting as one edit ("sweep" for
// "swepe").
func Distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
