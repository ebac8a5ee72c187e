package index

// Path is the index file ("" when disabled).
func (ix *Index[T]) Path() string { return ix.path }
