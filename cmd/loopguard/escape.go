package main

import "unicode/utf8"

// Every text the command writes for people (file names, what rules and
// inputs say, the cells of every table, standard error, the HTML page) is
// escaped with escape.String first: package internal/escape holds the one
// policy, which rule.Clean follows too.

// width is the number of runes of s, which is how wide it shows once
// escaped, for the scripts a table of runs holds.
func width(s string) int { return utf8.RuneCountInString(s) }

// cutLeft shortens s to n runes by dropping its start, which it replaces by
// "...": the end of a path names the file.
func cutLeft(s string, n int) string {
	if width(s) <= n {
		return s
	}
	r := []rune(s)
	return "..." + string(r[len(r)-max(n-3, 0):])
}
