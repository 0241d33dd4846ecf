package domain

// Suggest returns the one of known that got is most likely a typo of (at
// most two edits away, and fewer than half of its letters), else "": for a
// message's "did you mean ...?".
func Suggest(got string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(got, k); d < bestD && d*2 < len(k) {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
