package web

// UnescapeHTMLEscapes is unescapeHTMLEscapes, for the tests.
var UnescapeHTMLEscapes = unescapeHTMLEscapes
