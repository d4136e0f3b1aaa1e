package findings

import "fmt"

// GradeScale documents how Grade turns findings into letters; the CLI's help
// text and docs quote it.
const GradeScale = `Each area (Forking, Delegation, Hand-offs, Caching, Tools) starts at 100
points. Every finding in it takes off its severity (warning 10, error 25) plus up to 40
points for its price: 40 × the larger of its share of the run's elapsed time
and its share of the run's tokens (in + out), capped at 1. Letters:
A ≥ 95, B ≥ 80, C ≥ 65, D ≥ 50, F below. One cheap warning is a B; an error,
or a warning that cost a third of the run, is a C or worse. An area in which no
rule examined anything (no fork, sub-agent or serial run of calls for Forking;
no hand-off for Hand-offs; no comparable requests for Caching; no failing call
for Tools) reads n/a, with
no score: nothing applied, which is no A.`

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

// NA is the grade of an area in which no rule examined anything.
const NA = "n/a"

// Grade scores every area of r per GradeScale. An area is graded when a
// finding is in it or a check of one of its rules examined something
// (Check.Examined, read with r.Rules for the rule's area); any other
// area's letter is NA and it has no score.
func Grade(r *Report) (map[Area]string, map[Area]int) {
	examined := map[Area]bool{}
	for _, f := range r.Findings {
		examined[f.Area] = true
	}
	for _, c := range r.Checks {
		if rule := Lookup(r.Rules, c.Rule); rule != nil && c.Examined {
			examined[rule.Area] = true
		}
	}
	scores := map[Area]int{}
	for _, a := range Areas() {
		if examined[a] {
			scores[a] = 100
		}
	}
	for _, f := range r.Findings {
		scores[f.Area] -= Penalty(f, r)
	}
	letters := map[Area]string{}
	for _, a := range Areas() {
		if !examined[a] {
			letters[a] = NA
			continue
		}
		if scores[a] < 0 {
			scores[a] = 0
		}
		letters[a] = Letter(scores[a])
	}
	return letters, scores
}

// GradeLine is "Forking B (88) · Delegation A (100) · Hand-offs n/a".
func (r *Report) GradeLine() string {
	s := ""
	for i, a := range Areas() {
		if i > 0 {
			s += " · "
		}
		if r.Grades[a] == NA {
			s += fmt.Sprintf("%s %s", a, NA)
			continue
		}
		s += fmt.Sprintf("%s %s (%d)", a, r.Grades[a], r.Scores[a])
	}
	return s
}
