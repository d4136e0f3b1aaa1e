package when

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2025, 5, 10, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
	}{
		{"2025-05-01T14:00:00Z", time.Date(2025, 5, 1, 14, 0, 0, 0, time.UTC)},
		{"2025-05-01", time.Date(2025, 5, 1, 0, 0, 0, 0, time.Local)},
		{"7d", now.Add(-7 * 24 * time.Hour)},
		{"2w", now.Add(-14 * 24 * time.Hour)},
		{"36h", now.Add(-36 * time.Hour)},
		{"1.5d", now.Add(-36 * time.Hour)},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in, now)
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "-3h", "--db=x.db", "-7d"} {
		if _, err := Parse(bad, now); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}
