// Package readme builds every Go block of the repository's README.md and
// docs/*.md, each as a program of its own, so that the examples compile as
// they are written. Its tests also run each block of those files that
// needs no service, key or network, and compare what it prints with the
// block's "// Output:" comment; run each test-file block with the block
// before it; and follow the recipes of docs/checkout.md.
//
// A block is built by the test of the module it imports: a block that
// imports an adapter (adapters/...) is built by that adapter's test, one
// that imports a store and no adapter by the store's, and the others by the
// core's own test (internal/readme). Each module's test thus builds only
// what the module's own tests need anyway, with the same flags (-race when
// the test runs under it), so no single test has to build the SDKs of every
// adapter within its time limit. Each module that builds blocks calls [Test]
// from a test in its root directory; the core's test fails when a block
// belongs to a module that does not.
package readme
