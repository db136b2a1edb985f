package report

import (
	"fmt"
	"image/color"
	"math"
	"testing"
)

// linear is an sRGB channel (0–255) in linear light (WCAG 2's and CIE's
// formula).
func linear(c uint8) float64 {
	v := float64(c) / 255
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

func linearRGB(c color.Color) [3]float64 {
	r := color.RGBAModel.Convert(c).(color.RGBA)
	return [3]float64{linear(r.R), linear(r.G), linear(r.B)}
}

// luminance is WCAG 2's relative luminance of linear RGB.
func luminance(l [3]float64) float64 { return 0.2126*l[0] + 0.7152*l[1] + 0.0722*l[2] }

// contrast is WCAG 2's contrast ratio of two relative luminances.
func contrast(a, b float64) float64 { return (max(a, b) + 0.05) / (min(a, b) + 0.05) }

// TestContrast checks the formula on the values WCAG's examples give.
func TestContrast(t *testing.T) {
	for _, tc := range []struct {
		c    color.Color
		want float64
	}{
		{color.Black, 21},
		{color.White, 1},
		{color.RGBA{118, 118, 118, 255}, 4.54}, // #767676, the lightest grey with 4.5:1 for text
		{color.RGBA{240, 228, 66, 255}, 1.32},  // Okabe and Ito's yellow, which the palette had
	} {
		if got := contrast(luminance(linearRGB(tc.c)), 1); math.Abs(got-tc.want) > 0.01 {
			t.Errorf("contrast of %v on white = %.3f, want %.2f", tc.c, got, tc.want)
		}
	}
}

// minContrast is WCAG 2's minimum contrast for graphical objects (1.4.11,
// non-text contrast): each configuration's line must be readable on the
// plots' white background.
const minContrast = 3.0

func TestPaletteContrast(t *testing.T) {
	if len(palette) != len(dashes) {
		t.Fatalf("%d colours, %d dash patterns", len(palette), len(dashes))
	}
	for i, c := range palette {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if got := contrast(luminance(linearRGB(c)), 1); got < minContrast {
				t.Errorf("palette[%d] %v: contrast %.2f:1 on white, under %.0f:1", i, c, got, minContrast)
			}
		})
	}
	if got := contrast(luminance(linearRGB(captionColor)), 1); got < 4.5 { // text: WCAG's 4.5:1
		t.Errorf("caption colour: contrast %.2f:1 on white, under 4.5:1", got)
	}
}

// cvd are Machado, Oliveira and Fernandes' (2009) matrices simulating full
// protanopia, deuteranopia and tritanopia on linear RGB, beside normal
// vision.
var cvd = []struct {
	name string
	m    [3][3]float64
}{
	{"normal", [3][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}},
	{"protanopia", [3][3]float64{{0.152286, 1.052583, -0.204868}, {0.114503, 0.786281, 0.099216}, {-0.003882, -0.048116, 1.051998}}},
	{"deuteranopia", [3][3]float64{{0.367322, 0.860646, -0.227968}, {0.280085, 0.672501, 0.047413}, {-0.011820, 0.042940, 0.968881}}},
	{"tritanopia", [3][3]float64{{1.255528, -0.076749, -0.178779}, {-0.078411, 0.930809, 0.147602}, {0.004733, 0.691367, 0.303900}}},
}

// lab is CIELAB (D65) of linear RGB.
func lab(l [3]float64) [3]float64 {
	x := (0.4124*l[0] + 0.3576*l[1] + 0.1805*l[2]) / 0.95047
	y := 0.2126*l[0] + 0.7152*l[1] + 0.0722*l[2]
	z := (0.0193*l[0] + 0.1192*l[1] + 0.9505*l[2]) / 1.08883
	f := func(t float64) float64 {
		if t > 216.0/24389 {
			return math.Cbrt(t)
		}
		return t*24389/27/116 + 16.0/116
	}
	return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
}

// minDeltaE is the least CIELAB distance (ΔE*ab) between two palette
// colours in each kind of vision: Okabe and Ito's palette, designed for
// it, has 16 under tritanopia.
const minDeltaE = 15

func TestPaletteDistinct(t *testing.T) {
	for _, v := range cvd {
		t.Run(v.name, func(t *testing.T) {
			seen := make([][3]float64, len(palette))
			for i, c := range palette {
				l := linearRGB(c)
				var s [3]float64
				for r := range 3 {
					s[r] = min(max(v.m[r][0]*l[0]+v.m[r][1]*l[1]+v.m[r][2]*l[2], 0), 1)
				}
				seen[i] = lab(s)
			}
			for i := range seen {
				for j := i + 1; j < len(seen); j++ {
					d := math.Hypot(math.Hypot(seen[i][0]-seen[j][0], seen[i][1]-seen[j][1]), seen[i][2]-seen[j][2])
					if d < minDeltaE {
						t.Errorf("palette[%d] %v and [%d] %v: ΔE %.1f, under %d", i, palette[i], j, palette[j], d, minDeltaE)
					}
				}
			}
		})
	}
}
