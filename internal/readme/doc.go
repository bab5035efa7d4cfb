// Package readme holds no code: its test builds every Go block of the
// repository's README.md, each as a file of its own, so that the README's
// examples compile as they are written.
package readme
