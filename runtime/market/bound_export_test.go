package market

// WithScanBounds returns s with a browse bounded to browse records and a
// search to search, so that small markets reach the bounds.
func (s *Service) WithScanBounds(browse, search int) *Service {
	c := *s
	c.maxBrowse, c.maxSearch = browse, search
	return &c
}
