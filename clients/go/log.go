package analytics

// verbosef logs batching and upload activity when Verbose or DEBUG=analytics
// is on.
func (c *Client) verbosef(format string, args ...interface{}) {
	if c.cfg.verbose {
		c.cfg.logger.Printf(format, args...)
	}
}

// logf logs unconditionally; it is used for failures.
func (c *Client) logf(format string, args ...interface{}) {
	c.cfg.logger.Printf(format, args...)
}
