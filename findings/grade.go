package findings

import "fmt"

// GradeScale documents how Grade turns findings into letters; the CLI's help
// text and docs quote it.
const GradeScale = `Each area (Forking, Delegation, Hand-offs, Caching) starts at 100
points. Every finding in it takes off its severity (warning 10, error 25) plus up to 40
points for its price: 40 × the larger of its share of the run's elapsed time
and its share of the run's tokens (in + out), capped at 1. Letters:
A ≥ 95, B ≥ 80, C ≥ 65, D ≥ 50, F below. One cheap warning is a B; an error,
or a warning that cost a third of the run, is a C or worse.`

// Penalty is how many points finding f takes off its area's score, given
// the run's totals in r.
func Penalty(f Finding, r *Report) int {
	base := 10
	if f.Severity == Error {
		base = 25
	}
	share := 0.0
	if r.ElapsedMS > 0 {
		share = float64(f.Price.ElapsedMS) / float64(r.ElapsedMS)
	}
	if tot := r.TokensIn + r.TokensOut; tot > 0 {
		if s := float64(f.Price.TokensIn+f.Price.TokensOut) / float64(tot); s > share {
			share = s
		}
	}
	if share > 1 {
		share = 1
	}
	return base + int(40*share+0.5)
}

// Letter turns a score into a grade letter per GradeScale.
func Letter(score int) string {
	switch {
	case score >= 95:
		return "A"
	case score >= 80:
		return "B"
	case score >= 65:
		return "C"
	case score >= 50:
		return "D"
	}
	return "F"
}

// Grade scores every area of r per GradeScale.
func Grade(r *Report) (map[Area]string, map[Area]int) {
	scores := map[Area]int{}
	for _, a := range Areas() {
		scores[a] = 100
	}
	for _, f := range r.Findings {
		scores[f.Area] -= Penalty(f, r)
	}
	letters := map[Area]string{}
	for a, s := range scores {
		if s < 0 {
			scores[a] = 0
		}
		letters[a] = Letter(scores[a])
	}
	return letters, scores
}

// GradeLine is "Forking B (88) · Delegation A (100) · Hand-offs A (100)".
func (r *Report) GradeLine() string {
	s := ""
	for i, a := range Areas() {
		if i > 0 {
			s += " · "
		}
		s += fmt.Sprintf("%s %s (%d)", a, r.Grades[a], r.Scores[a])
	}
	return s
}
