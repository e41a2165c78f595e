package plan

import "testing"

func TestPlanRecords(t *testing.T) {
	p, err := Load("../../../../conformance/handoff/plan.json")
	if err != nil {
		t.Fatal(err)
	}
	if !p.IsMeta(0) {
		t.Fatal("step 0 is not the meta")
	}
	for i := 1; i < len(p.Steps); i++ {
		if _, err := p.Record(i); err != nil {
			t.Fatal(err)
		}
	}
	rec, _ := p.Record(1)
	// What Python's canonical_json writes for the same input.
	want := `{"city":"Tōkyō","extra":{"a":"é\"\\\n","b":[1,2.5,true,null]},"units":"c"}`
	if got := rec.GetAssistant().GetContent()[3].GetToolUse().GetInputJson(); got != want {
		t.Fatalf("input_json %s", got)
	}
	if p.WorkerID("go", 3) != "go-worker" {
		t.Fatal(p.WorkerID("go", 3))
	}
}
