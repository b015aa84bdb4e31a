package chart

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Text has no measure in an SVG written ahead of the browser that draws
// it, so the pictures estimate it: textWidth errs wide (the advance
// widths of DejaVu Sans, the widest of the common sans-serif faces and
// Debian's default), so that text laid out by it fits in any of them.

// charEm is the advance width of the printable ASCII characters, from ' '
// to '~', in em (DejaVu Sans Book).
var charEm = [...]float64{
	0.318, 0.401, 0.460, 0.838, 0.636, 0.950, 0.780, 0.275, 0.390, 0.390, 0.500, 0.838, 0.318, 0.361, 0.318, 0.337, // ' ' to '/'
	0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, // digits
	0.337, 0.337, 0.838, 0.838, 0.838, 0.531, 1.000, // ':' to '@'
	0.684, 0.686, 0.698, 0.770, 0.632, 0.575, 0.775, 0.752, 0.295, 0.295, 0.656, 0.557, 0.863, // 'A' to 'M'
	0.748, 0.787, 0.603, 0.787, 0.695, 0.635, 0.611, 0.732, 0.684, 0.989, 0.685, 0.611, 0.685, // 'N' to 'Z'
	0.390, 0.337, 0.390, 0.838, 0.500, 0.500, // '[' to '`'
	0.613, 0.635, 0.550, 0.635, 0.615, 0.352, 0.635, 0.634, 0.278, 0.278, 0.579, 0.278, 0.974, // 'a' to 'm'
	0.634, 0.612, 0.635, 0.635, 0.411, 0.521, 0.392, 0.634, 0.592, 0.818, 0.592, 0.592, 0.525, // 'n' to 'z'
	0.636, 0.337, 0.636, 0.838, // '{' to '~'
}

// boldEm is how much wider bold text is (DejaVu Sans Bold's digits are
// 0.696 em against 0.636).
const boldEm = 1.12

// textWidth is the estimated width in pixels of s at size px (bold or
// not): wide rather than narrow.
func textWidth(s string, px float64, bold bool) float64 {
	em := 0.0
	for _, r := range s {
		switch {
		case r >= ' ' && r <= '~':
			em += charEm[r-' ']
		case r == '·':
			em += 0.318
		default: // − → ± … ▲ and the rest: as wide as the widest
			em += 1.0
		}
	}
	if bold {
		em *= boldEm
	}
	return em * px
}

// wrapText breaks s into lines no wider than width (textWidth at px),
// after a separator ("/", ":", " ", "-", "_", ".", ",") where it can, else
// anywhere: every character of s is in one of the lines, in order.
func wrapText(s string, width, px float64) []string {
	var lines []string
	for s != "" {
		if textWidth(s, px, false) <= width {
			return append(lines, s)
		}
		// The longest prefix that fits, and the last break in it.
		fit, brk := 0, 0
		for i, r := range s {
			next := i + len(string(r))
			if textWidth(s[:next], px, false) > width {
				break
			}
			fit = next
			if strings.ContainsRune("/: -_.,", r) {
				brk = next
			}
		}
		switch {
		case brk > 0:
			fit = brk
		case fit == 0: // not even one character fits: one a line
			fit = len(string([]rune(s)[0]))
		}
		lines = append(lines, s[:fit])
		s = s[fit:]
	}
	return lines
}

// box is a rectangle: its left, top, right and bottom edges.
type box struct{ x0, y0, x1, y1 float64 }

func (b box) overlaps(o box) bool {
	return b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1
}

func (b box) inside(o box) bool {
	return b.x0 >= o.x0 && b.x1 <= o.x1 && b.y0 >= o.y0 && b.y1 <= o.y1
}

// tag is a short text beside a point of a plot (a regression's change, an
// open regression's commit): placed by placeTags so that no two overlap.
type tag struct {
	// ax, ay is the point it names; text its text, bold or not, in colour
	// (class: its class attribute).
	ax, ay float64
	text   string
	bold   bool
	colour string
	class  string
	w, h   float64
	// x, baseline and anchor are where placeTags put the text (its
	// text-anchor at x), at the box it keeps free: the side of the box
	// nearest the point, so that the text, narrower in most faces than
	// estimated, stays by its point.
	x, baseline float64
	anchor      string
	at          box
}

// tagPx is the font size of a tag; tagClear how far it keeps from the
// points of the plot.
const (
	tagPx    = 12
	tagClear = 6
)

// placeTags places every tag of ts beside its point, within bounds when
// it can: the first of a ring of places around the point (left or right
// of it, above or below, then further away) where it overlaps no tag
// placed before it, no obstacle (the points' markers, kept tagClear
// away) and no line (the boxes lineBoxes makes of the plot's lines);
// failing that, the first that only crosses a line. When no place within
// bounds is free it goes further up, out of bounds if it must: tags never
// overlap one another.
func placeTags(ts []tag, bounds box, obstacles, lines []box) {
	var placed []box
	// free says b is free of the tags placed, and at level 1 of the
	// points and within bounds, at level 2 also of the lines.
	free := func(b box, level int) bool {
		for _, p := range placed {
			if b.overlaps(p) {
				return false
			}
		}
		if level == 0 {
			return true
		}
		for _, o := range obstacles { // kept clear of other points, so that it reads as its own point's
			if b.overlaps(box{o.x0 - tagClear, o.y0 - tagClear, o.x1 + tagClear, o.y1 + tagClear}) {
				return false
			}
		}
		if level == 2 {
			for _, l := range lines {
				if b.overlaps(l) {
					return false
				}
			}
		}
		return b.inside(bounds)
	}
	for i := range ts {
		t := &ts[i]
		t.w, t.h = textWidth(t.text, tagPx, t.bold)+2, tagPx+3
		// at is the k-th place out on one side of the point (side: -1
		// left of it, 0 centred on it, 1 right of it), above or below it.
		at := func(side int, above bool, k int) box {
			x := t.ax - t.w/2
			switch side {
			case -1:
				x = t.ax - 10 - t.w
			case 1:
				x = t.ax + 10
			}
			y := t.ay - 9 - t.h - float64(k)*(t.h+1) // the box's top, above the point
			if !above {
				y = t.ay + 9 + float64(k)*(t.h+1)
			}
			return box{x, y, x + t.w, y + t.h}
		}
		var chosen box
		side, found := 0, false
		for level := 2; level > 0 && !found; level-- {
			for k := 0; k < 8 && !found; k++ {
				for _, above := range []bool{true, false} {
					for _, sd := range []int{-1, 1, 0} {
						if b := at(sd, above, k); !found && free(b, level) {
							chosen, side, found = b, sd, true
						}
					}
				}
			}
		}
		for k := 0; !found; k++ { // up and up: out of bounds, clear of the other tags
			for _, sd := range []int{-1, 1} {
				if b := at(sd, true, k); !found && free(b, 0) {
					chosen, side, found = b, sd, true
				}
			}
		}
		t.at, t.baseline = chosen, chosen.y1-3
		switch side {
		case -1:
			t.x, t.anchor = chosen.x1-1, "end"
		case 1:
			t.x, t.anchor = chosen.x0+1, "start"
		default:
			t.x, t.anchor = (chosen.x0+chosen.x1)/2, "middle"
		}
		placed = append(placed, chosen)
	}
}

// lineBoxes are small boxes along the polyline through pts (each "x,y"),
// for placeTags to keep tags off it.
func lineBoxes(pts []string) []box {
	var out []box
	var px, py float64
	for i, p := range pts {
		xs, ys, _ := strings.Cut(p, ",")
		x, _ := strconv.ParseFloat(xs, 64)
		y, _ := strconv.ParseFloat(ys, 64)
		if i > 0 {
			n := int(math.Hypot(x-px, y-py)/3) + 1
			for k := 0; k <= n; k++ {
				cx, cy := px+(x-px)*float64(k)/float64(n), py+(y-py)*float64(k)/float64(n)
				out = append(out, box{cx - 1.5, cy - 1.5, cx + 1.5, cy + 1.5})
			}
		}
		px, py = x, y
	}
	return out
}

// writeTags draws ts (placed): each text, and a thin line to its point
// when the text is away from it.
func writeTags(b *svgBuf, ts []tag) {
	for _, t := range ts {
		cx := math.Max(t.at.x0, math.Min(t.ax, t.at.x1))
		cy := math.Max(t.at.y0, math.Min(t.ay, t.at.y1))
		if math.Hypot(cx-t.ax, cy-t.ay) > 16 {
			b.f(`<line class="leader" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="0.8" stroke-opacity="0.7"/>`,
				f1(t.ax), f1(t.ay), f1(cx), f1(cy), t.colour)
		}
		weight := ""
		if t.bold {
			weight = ` font-weight="bold"`
		}
		b.f(`<text class="%s" x="%s" y="%s" text-anchor="%s" font-size="%d"%s fill="%s" data-box="%s %s %s %s">%s</text>`+"\n",
			xmlText(joinClass("tag", t.class)), f1(t.x), f1(t.baseline), t.anchor, tagPx, weight, t.colour,
			f1(t.at.x0), f1(t.at.y0), f1(t.at.x1), f1(t.at.y1), xmlText(t.text))
	}
}

// symbol is the mark a legend or key entry shows before its text.
type symbol int

// The symbols of legends and keys.
const (
	symbolLine    symbol = iota // a series' line with a dot
	symbolDot                   // a passed run on the baseline branch
	symbolDiamond               // a passed run off it
	symbolCross                 // a run that did not pass
	symbolBlip                  // a hollow circle
	symbolSegment               // a dashed level
	symbolRing                  // a ringed point
)

// flowItem is one entry of a legend or key: a symbol and a text, laid out
// by flow (at x, y: the symbol's left edge and the middle of the first
// line of the text, wrapped into lines).
type flowItem struct {
	text, title  string
	colour, dash string
	symbol       symbol
	x, y, lineH  float64
	lines        []string
}

// flowSymbolW is the room of an entry's symbol, flowGap the room between
// entries of a row.
const (
	flowSymbolW = 26
	flowGap     = 18
	flowPx      = 12
)

// flow lays items out left to right from (x0, y0) in rows no wider than
// width, each line lineH high: an entry goes on a new row when it does not
// fit on the current one, and an entry wider than a whole row has its
// text wrapped (wrapText) over several lines. It returns the height used.
func flow(items []flowItem, x0, y0, width, lineH float64) float64 {
	x, top, rowLines := x0, y0, 0
	for i := range items {
		it := &items[i]
		it.lines = wrapText(it.text, width-flowSymbolW, flowPx)
		w := flowSymbolW + textWidth(it.text, flowPx, false)
		if len(it.lines) > 1 {
			w = width
		}
		if x > x0 && x+w > x0+width {
			x, top, rowLines = x0, top+float64(rowLines)*lineH, 0
		}
		it.x, it.y, it.lineH = x, top+lineH/2, lineH
		rowLines = max(rowLines, len(it.lines))
		x += w + flowGap
	}
	return top + float64(rowLines)*lineH - y0
}

// writeFlow draws items laid out by flow.
func writeFlow(b *svgBuf, items []flowItem) {
	for _, it := range items {
		x, y, c := it.x, it.y, it.colour
		switch it.symbol {
		case symbolLine:
			b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/><circle cx="%s" cy="%s" r="3" fill="%s"/>`,
				f1(x), f1(y), f1(x+20), f1(y), c, it.dash, f1(x+10), f1(y), c)
		case symbolDot:
			b.f(`<circle cx="%s" cy="%s" r="3.5" fill="%s"/>`, f1(x+8), f1(y), c)
		case symbolDiamond:
			marker{x: x + 8, y: y, style: fmt.Sprintf(` fill="#ffffff" stroke="%s" stroke-width="1.5"`, c)}.diamond(b, 5)
		case symbolCross:
			marker{x: x + 8, y: y, style: fmt.Sprintf(` stroke="%s" stroke-width="2"`, c)}.cross(b, 4)
		case symbolBlip:
			b.f(`<circle cx="%s" cy="%s" r="3.5" fill="#ffffff" stroke="%s" stroke-width="1.5"/>`, f1(x+8), f1(y), c)
		case symbolSegment:
			b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="6" stroke-opacity="0.22" stroke-linecap="round"/>`, f1(x+2), f1(y), f1(x+18), f1(y), c)
		case symbolRing:
			b.f(`<circle cx="%s" cy="%s" r="7" fill="none" stroke="%s" stroke-width="2"/>`, f1(x+8), f1(y), c)
		}
		tx := f1(x + flowSymbolW)
		b.f(`<text class="label" x="%s" y="%s" dominant-baseline="middle" data-w="%s">`, tx, f1(y), f1(textWidth(it.text, flowPx, false)))
		if it.title != "" {
			b.f(`<title>%s</title>`, xmlText(it.title))
		}
		if len(it.lines) == 1 {
			b.f(`%s</text>`+"\n", xmlText(it.lines[0]))
			continue
		}
		for k, l := range it.lines {
			dy := "0"
			if k > 0 {
				dy = num(it.lineH)
			}
			b.f(`<tspan x="%s" dy="%s" data-w="%s">%s</tspan>`, tx, dy, f1(textWidth(l, flowPx, false)), xmlText(l))
		}
		b.f("</text>\n")
	}
}
