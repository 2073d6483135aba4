package httpstore

// A hand-written reader of the two XML listing documents signed list URLs
// return, so that the wasm module does not link encoding/xml for them (it
// cost about 175 KB of the module, 35 KB brotli-compressed). It accepts exactly what encoding/xml's Unmarshal into
// the structs this file replaced accepts and gives the same values, except
// that it is stricter in a few documented places (listxml_test.go checks
// both claims against encoding/xml):
//
//   - only whitespace, comments and processing instructions may stand
//     outside the root element (encoding/xml skips any text, CDATA or
//     <!DOCTYPE> before the root and never reads what follows it); a UTF-8
//     byte order mark may open the document;
//   - no <!DOCTYPE> or other <! declaration anywhere;
//   - element, attribute and processing instruction names are ASCII.

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Element kinds: what an open element means to the result. The kinds from
// xPrefix on are fields, whose direct text is a value.
const (
	xSkip      uint8 = iota // read for well-formedness only
	xS3Root                 // <ListBucketResult>
	xS3Entry                // <Contents>, one object
	xAzRoot                 // <EnumerationResults>
	xAzBlobs                // <Blobs>
	xAzEntry                // <Blob>, one object
	xAzProps                // <Blob><Properties>
	xPrefix                 // the root's <Prefix>
	xTruncated              // <IsTruncated>
	xToken                  // <NextContinuationToken> or <NextMarker>
	xKey                    // <Contents><Key> or <Blob><Name>
	xSize                   // <Contents><Size> or <Properties><Content-Length>
)

// listChildren says which child elements (by local name, the part after a
// namespace prefix) are read inside which kind of element; all others are
// skipped whatever they contain.
var listChildren = [...]struct {
	parent, kind uint8
	name         string
}{
	{xS3Root, xPrefix, "Prefix"},
	{xS3Root, xTruncated, "IsTruncated"},
	{xS3Root, xToken, "NextContinuationToken"},
	{xS3Root, xS3Entry, "Contents"},
	{xS3Entry, xKey, "Key"},
	{xS3Entry, xSize, "Size"},
	{xAzRoot, xPrefix, "Prefix"},
	{xAzRoot, xToken, "NextMarker"},
	{xAzRoot, xAzBlobs, "Blobs"},
	{xAzBlobs, xAzEntry, "Blob"},
	{xAzEntry, xKey, "Name"},
	{xAzEntry, xAzProps, "Properties"},
	{xAzProps, xSize, "Content-Length"},
}

// xmlEntities are the predefined entities, each name with its semicolon.
var xmlEntities = [...]struct {
	name string
	char byte
}{{"lt;", '<'}, {"gt;", '>'}, {"amp;", '&'}, {"apos;", '\''}, {"quot;", '"'}}

// parseListXML reads an S3 (or GCS XML API) ListBucketResult or, if azure,
// an Azure EnumerationResults, with the space around body trimmed as
// bytes.TrimSpace does. Azure's NextMarker becomes NextContinuationToken
// and a non-empty one sets IsTruncated. Errors name the byte offset in body.
func parseListXML(body []byte, azure bool) (*listBucketResult, error) {
	root, kind := "ListBucketResult", xS3Root
	if azure {
		root, kind = "EnumerationResults", xAzRoot
	}
	p := listParser{doc: bytes.TrimSpace(body)}
	if msg := p.run(root, kind); msg != "" {
		base := len(body) - len(bytes.TrimLeftFunc(body, unicode.IsSpace))
		return nil, fmt.Errorf("bad %s: byte %d: %s", root, base+p.pos, msg)
	}
	if azure {
		p.res.IsTruncated = p.res.NextContinuationToken != ""
	}
	return &p.res, nil
}

// listParser is the state of one parseListXML: a single pass over doc with
// a stack of the open elements. Its methods report a problem as a message
// ("" for none), with pos left where it was found.
type listParser struct {
	doc   []byte
	pos   int
	stack []listOpen
	text  []byte // the decoded text of the open field so far
	tmp   []byte // scratch for text that is checked but not kept
	res   listBucketResult
}

// listOpen is an open element: doc[name:end] is its name as written, for
// matching the end tag, and kind what it is to the result.
type listOpen struct {
	name, end int
	kind      uint8
}

// run parses the whole document, whose root must be named root (after any
// prefix) and is of the given kind.
func (p *listParser) run(root string, kind uint8) string {
	d := p.doc
	if bytes.HasPrefix(d, []byte("\uFEFF")) {
		p.pos = 3
	}
	done := false // the root element has ended
	for {
		if p.pos >= len(d) {
			if done {
				return ""
			}
			return "unexpected end of document"
		}
		top := xSkip
		if n := len(p.stack); n > 0 {
			top = p.stack[n-1].kind
		}
		var msg string
		rest := d[p.pos:]
		switch {
		case rest[0] != '<':
			if len(p.stack) > 0 {
				msg = p.chars(top, 0)
			} else if !isXMLSpace(rest[0]) {
				msg = "text outside the root element"
			} else {
				p.pos++
			}
		case bytes.HasPrefix(rest, []byte("<?")):
			msg = p.procInst()
		case bytes.HasPrefix(rest, []byte("<!--")):
			msg = p.comment()
		case bytes.HasPrefix(rest, []byte("<![CDATA[")) && len(p.stack) > 0:
			msg = p.cdata(top)
		case bytes.HasPrefix(rest, []byte("<!")):
			msg = "unsupported <! markup (DOCTYPE, stray CDATA or a broken comment)"
		case bytes.HasPrefix(rest, []byte("</")):
			msg = p.endTag()
			done = msg == "" && len(p.stack) == 0
		case done:
			msg = "content after the root element"
		default:
			msg = p.startTag(root, kind, top)
			done = msg == "" && len(p.stack) == 0
		}
		if msg != "" {
			return msg
		}
	}
}

// isXMLSpace tells whether c is XML white space.
func isXMLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n'
}

// space skips white space.
func (p *listParser) space() {
	for p.pos < len(p.doc) && isXMLSpace(p.doc[p.pos]) {
		p.pos++
	}
}

// at returns the byte at pos, or 0 at the end of the document (a NUL in
// markup is an error wherever at is used).
func (p *listParser) at() byte {
	if p.pos < len(p.doc) {
		return p.doc[p.pos]
	}
	return 0
}

// name reads a name: an ASCII letter, '_' or ':', then letters, digits,
// '_', ':', '.' or '-'. A non-ASCII character in or at the start of a name
// is an error (encoding/xml accepts XML 1.0's Unicode letters).
func (p *listParser) name() (start int, msg string) {
	start = p.pos
	for p.pos < len(p.doc) && isNameByte(p.doc[p.pos], p.pos == start) {
		p.pos++
	}
	switch {
	case p.at() >= utf8.RuneSelf:
		return start, "non-ASCII name"
	case p.pos == start:
		return start, "expected a name"
	}
	return start, ""
}

// isNameByte tells whether c may stand in a name, or first in one.
func isNameByte(c byte, first bool) bool {
	l := c | 0x20 // an ASCII letter in lower case
	return 'a' <= l && l <= 'z' || c == '_' || c == ':' || !first && (c == '.' || c == '-' || '0' <= c && c <= '9')
}

// qname reads an element or attribute name, which has at most one colon,
// and returns its local part: what follows a prefix "p:", or all of it
// when the colon is first or last, as encoding/xml splits names.
func (p *listParser) qname() (start int, local []byte, msg string) {
	start, msg = p.name()
	if msg != "" {
		return start, nil, msg
	}
	local = p.doc[start:p.pos]
	switch i := bytes.IndexByte(local, ':'); {
	case bytes.Count(local, []byte(":")) > 1:
		return start, nil, "more than one colon in a name"
	case i > 0 && i < len(local)-1:
		local = local[i+1:]
	}
	return start, local, ""
}

// startTag reads a start tag (or empty-element tag) at pos; top is the
// kind of the element it opens in.
func (p *listParser) startTag(root string, rootKind, top uint8) string {
	p.pos++
	start, local, msg := p.qname()
	if msg != "" {
		return msg
	}
	open := listOpen{name: start, end: p.pos, kind: xSkip}
	if len(p.stack) == 0 {
		if string(local) != root {
			return "root element is <" + string(local) + ">, want <" + root + ">"
		}
		open.kind = rootKind
	}
	for _, c := range listChildren {
		if c.parent == top && string(local) == c.name {
			open.kind = c.kind
		}
	}
	switch {
	case open.kind == xS3Entry || open.kind == xAzEntry:
		p.res.Contents = append(p.res.Contents, listEntry{})
	case open.kind >= xPrefix:
		p.text = p.text[:0]
	}
	p.stack = append(p.stack, open)
	for {
		p.space()
		switch p.at() {
		case '>':
			p.pos++
			return ""
		case '/':
			p.pos++
			if p.at() != '>' {
				return "expected /> in element"
			}
			p.pos++
			return p.close()
		}
		// An attribute: read and ignored. Like encoding/xml, no space is
		// needed between attributes and repeated names are not errors.
		if _, _, msg := p.qname(); msg != "" {
			return "attribute name: " + msg
		}
		p.space()
		if p.at() != '=' {
			return "attribute name without ="
		}
		p.pos++
		p.space()
		q := p.at()
		if q != '"' && q != '\'' {
			return "unquoted or missing attribute value"
		}
		p.pos++
		if msg := p.chars(xSkip, q); msg != "" {
			return msg
		}
	}
}

// endTag reads an end tag at pos, which must close the innermost open
// element, written with the same name.
func (p *listParser) endTag() string {
	p.pos += 2
	start, _, msg := p.qname()
	if msg != "" {
		return msg
	}
	name := p.doc[start:p.pos]
	p.space()
	if p.at() != '>' {
		return "invalid characters in end tag </" + string(name) + ">"
	}
	p.pos++
	n := len(p.stack)
	if n == 0 {
		return "end tag </" + string(name) + "> outside the root element"
	}
	if open := p.stack[n-1]; !bytes.Equal(p.doc[open.name:open.end], name) {
		return "element <" + string(p.doc[open.name:open.end]) + "> closed by </" + string(name) + ">"
	}
	return p.close()
}

// close ends the innermost open element; a field stores its value, parsed
// as encoding/xml does: no text is false or 0, else the text with Unicode
// space trimmed must parse.
func (p *listParser) close() string {
	open := p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	if open.kind < xPrefix {
		return ""
	}
	r := &p.res
	v := string(p.text)
	var err error
	switch open.kind {
	case xPrefix:
		r.Prefix = v
	case xToken:
		r.NextContinuationToken = v
	case xKey:
		r.Contents[len(r.Contents)-1].Key = v
	case xTruncated:
		r.IsTruncated = false
		if v != "" {
			r.IsTruncated, err = strconv.ParseBool(strings.TrimSpace(v))
		}
	case xSize:
		var n int64
		if v != "" {
			n, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
		r.Contents[len(r.Contents)-1].Size = n
	}
	if err != nil {
		return "<" + string(p.doc[open.name:open.end]) + ">: " + err.Error()
	}
	return ""
}

// chars reads character data at pos up to a '<' or, for an attribute
// value, up to the closing quote q, which it consumes. Entities and
// character references are decoded and line ends normalized to "\n"; the
// result must be UTF-8 of XML characters. If top, the kind of the element
// the text is in, is a field, the text is appended to its value.
func (p *listParser) chars(top uint8, q byte) string {
	buf := p.tmp[:0]
	if top >= xPrefix {
		buf = p.text
	}
	from, start, d := len(buf), p.pos, p.doc
	for {
		if p.pos == len(d) {
			if q != 0 {
				return "unexpected end of document in attribute value"
			}
			break
		}
		c := d[p.pos]
		if c == '<' {
			if q != 0 {
				return "< in attribute value"
			}
			break
		}
		if q != 0 && c == q {
			p.pos++
			break
		}
		switch c {
		case '>':
			if q == 0 && p.pos-start >= 2 && d[p.pos-1] == ']' && d[p.pos-2] == ']' {
				return "]]> in text"
			}
		case '&':
			var msg string
			if buf, msg = p.entity(buf); msg != "" {
				return msg
			}
			continue
		case '\r':
			c = '\n'
			if p.pos+1 < len(d) && d[p.pos+1] == '\n' {
				p.pos++
			}
		}
		buf = append(buf, c)
		p.pos++
	}
	return p.keep(top, buf, from)
}

// keep checks that buf[from:], text just decoded, is UTF-8 of XML
// characters and keeps buf as the field's value (top is a field) or as
// scratch space.
func (p *listParser) keep(top uint8, buf []byte, from int) string {
	if top >= xPrefix {
		p.text = buf
	} else {
		p.tmp = buf
	}
	for b := buf[from:]; len(b) > 0; {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			return "invalid UTF-8"
		}
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r > 0xD7FF && r < 0xE000 || r == 0xFFFE || r == 0xFFFF {
			return fmt.Sprintf("illegal character %U", r)
		}
		b = b[n:]
	}
	return ""
}

// entity decodes the entity or character reference at pos (at its '&')
// onto buf. Character references are decimal or (after "#x") hexadecimal
// and, as encoding/xml decodes them, a surrogate becomes U+FFFD; whether
// the character is allowed is checked with the rest of the text.
func (p *listParser) entity(buf []byte) ([]byte, string) {
	ref := p.doc[p.pos+1:]
	if len(ref) > 0 && ref[0] == '#' {
		i, base := 1, 10
		if len(ref) > 1 && ref[1] == 'x' {
			i, base = 2, 16
		}
		digits, n := i, 0
		for ; i < len(ref); i++ {
			v := 16 // not a digit
			if c, l := ref[i], ref[i]|0x20; '0' <= c && c <= '9' {
				v = int(c - '0')
			} else if 'a' <= l && l <= 'f' {
				v = int(l-'a') + 10
			}
			if v >= base {
				break
			}
			n = min(n*base+v, unicode.MaxRune+1)
		}
		if i == digits || i == len(ref) || ref[i] != ';' || n > unicode.MaxRune {
			return buf, "invalid character reference"
		}
		p.pos += i + 2
		return utf8.AppendRune(buf, rune(n)), ""
	}
	for _, e := range xmlEntities {
		if bytes.HasPrefix(ref, []byte(e.name)) {
			p.pos += 1 + len(e.name)
			return append(buf, e.char), ""
		}
	}
	return buf, "invalid entity (only &lt; &gt; &amp; &apos; &quot; and character references)"
}

// cdata reads a CDATA section at pos as text of the element of kind top.
func (p *listParser) cdata(top uint8) string {
	p.pos += len("<![CDATA[")
	i := bytes.Index(p.doc[p.pos:], []byte("]]>"))
	if i < 0 {
		p.pos = len(p.doc)
		return "unexpected end of document in CDATA section"
	}
	buf := p.tmp[:0]
	if top >= xPrefix {
		buf = p.text
	}
	from := len(buf)
	raw := p.doc[p.pos : p.pos+i]
	p.pos += i + 3
	for j := 0; j < len(raw); j++ {
		c := raw[j]
		if c == '\r' {
			c = '\n'
			if j+1 < len(raw) && raw[j+1] == '\n' {
				j++
			}
		}
		buf = append(buf, c)
	}
	return p.keep(top, buf, from)
}

// comment skips a comment at pos; "--" may only end it.
func (p *listParser) comment() string {
	p.pos += len("<!--")
	i := bytes.Index(p.doc[p.pos:], []byte("--"))
	if i < 0 {
		p.pos = len(p.doc)
		return "unexpected end of document in comment"
	}
	p.pos += i + 2
	if p.at() != '>' {
		return `"--" in comment`
	}
	p.pos++
	return ""
}

// procInst skips a processing instruction at pos. An XML declaration (one
// with target "xml", wherever it is) must not declare a version other than
// 1.0 or an encoding other than UTF-8, as encoding/xml requires.
func (p *listParser) procInst() string {
	p.pos += 2
	start, msg := p.name()
	if msg != "" {
		return "processing instruction target: " + msg
	}
	target := string(p.doc[start:p.pos])
	p.space()
	i := bytes.Index(p.doc[p.pos:], []byte("?>"))
	if i < 0 {
		p.pos = len(p.doc)
		return "unexpected end of document in processing instruction"
	}
	inst := string(p.doc[p.pos : p.pos+i])
	if target == "xml" {
		if v := procInstParam("version", inst); v != "" && v != "1.0" {
			return "unsupported XML version " + strconv.Quote(v)
		}
		if e := procInstParam("encoding", inst); e != "" && !strings.EqualFold(e, "utf-8") {
			return "unsupported encoding " + strconv.Quote(e)
		}
	}
	p.pos += i + 2
	return ""
}

// procInstParam returns the quoted value of param in a processing
// instruction's text, found the way encoding/xml finds it (the first
// "param=" followed by a quote, wherever it is), or "" if there is none.
func procInstParam(param, s string) string {
	param += "="
	i := 0
	var sep byte
	for i < len(s) {
		sub := s[i:]
		k := strings.Index(sub, param)
		if k < 0 || len(param)+k >= len(sub) {
			return ""
		}
		i += len(param) + k + 1
		if c := sub[len(param)+k]; c == '\'' || c == '"' {
			sep = c
			break
		}
	}
	if sep == 0 {
		return ""
	}
	j := strings.IndexByte(s[i:], sep)
	if j < 0 {
		return ""
	}
	return s[i : i+j]
}
