package analytics

// verbosef logs batching and upload activity when Verbose or DEBUG=analytics
// is on.
func (k *core) verbosef(format string, args ...interface{}) {
	if k.cfg.verbose {
		k.cfg.logger.Printf(format, args...)
	}
}

// logf logs unconditionally; it is used for batches that could not be
// delivered.
func (k *core) logf(format string, args ...interface{}) {
	k.cfg.logger.Printf(format, args...)
}
