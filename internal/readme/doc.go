// Package readme holds no code: its tests build every Go block of the
// repository's README.md, each as a file of its own, so that the README's
// examples compile as they are written; run each block that needs no
// service, key or network, and compare what it prints with the block's
// "// Output:" comment; and run each test-file block with the block before it.
package readme
