"""The UI in a real headless Chromium (Playwright, Debian's chromium) against a real service."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import Browser, Page, expect

from tests.web.conftest import ALICE, LiveService, alert, wait_for


def test_a_page_without_a_session_is_refused(browser: Browser, live: LiveService) -> None:
    context = browser.new_context(base_url=live.url)
    page = context.new_page()
    page.goto("/ui/runs?status=escalated")
    expect(page).to_have_url(re.compile(r"/ui/login\?next=/ui/runs%3Fstatus%3Descalated$"))
    page.get_by_label("Token").fill("wrong-token-wrong-token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("That token is not one of the configured tokens.")
    page.get_by_label("Token").fill(ALICE)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(r"/ui/runs\?status=escalated$"))  # back where they were going
    assert ALICE not in page.content()
    context.close()
    with httpx.Client(base_url=live.url) as anonymous:
        assert anonymous.get("/ui/approvals").status_code == 303
        assert anonymous.get("/ui/runs/x/events", headers={"accept": "text/event-stream"}).status_code == 401


def test_the_trust_panel_explains_a_grounded_enforced_step(signed_in: Page, live: LiveService) -> None:
    with live.client() as client:
        run_id = client.post("/webhook?source=alertmanager", json=alert(fingerprint="ui-trust")).json()["run_id"]
        wait_for(client, run_id, until=("escalated",))
    page = signed_in
    page.goto(f"/ui/runs/{run_id}")
    expect(page.get_by_test_id("run-status")).to_have_text("escalated")
    header = page.locator(".run-head")
    expect(header).to_contain_text("production")
    expect(header).to_contain_text("shop")
    expect(header).to_contain_text("alertmanager")

    step = page.locator("section.step[data-step=investigate]")
    panel = step.get_by_test_id("trust-panel")
    expect(panel.locator(".trust-title")).to_have_text("Trust (enforced)")
    chips = {key: panel.locator(f".chip[data-chip='{key}']") for key in ("S", "V", "G", "D", "trust")}
    expect(chips["S"].locator(".chip-value")).to_have_text("0.90")
    expect(chips["V"].locator(".chip-value")).to_have_text("0.85")
    expect(chips["V"].locator(".chip-detail")).to_have_text("independent · reviewer · scripted")
    expect(chips["G"].locator(".chip-value")).to_have_text("0.50")
    expect(chips["G"].locator(".chip-detail")).to_have_text("judge · judge-half · scripted")
    expect(chips["D"]).to_contain_text("Checks (D)")
    expect(chips["D"].locator(".chip-value")).to_have_text("PASS")
    expect(chips["trust"].locator(".chip-value")).to_have_text("0.50")
    expect(chips["trust"].locator(".chip-detail")).to_have_text("threshold 0.75 → escalated")
    expect(panel.get_by_test_id("divergence")).to_contain_text("|G − S| = 0.40")

    claims = panel.locator("li.claim")
    expect(claims).to_have_count(4)
    expect(panel.locator("li.claim.supported .claim-mark")).to_have_text(["✓", "✓"])
    expect(panel.locator("li.claim.unsupported .claim-mark")).to_have_text(["✗", "✗"])
    expect(claims.nth(0)).to_contain_text("checkout 5xx ratio 0.042")
    expect(panel.locator("li.check.passed")).to_contain_text("still_firing")
    expect(panel.locator(".flag.grounding-warning").first).to_contain_text(
        "1 transcript entry was shortened for the judge"
    )
    flagged = panel.locator("li.claim.unsupported", has_text="the database is healthy")
    expect(flagged.locator(".note.warn", has_text="truncation")).to_contain_text(
        "possibly a truncation artefact; raise grounding.max_trace_chars"
    )

    # The model-free anchor check sits beside the judge: it finds the pod the judge did not see.
    oomkilled = panel.locator("li.claim", has_text="checkout-7d9f-x2kqp was OOMKilled")
    expect(oomkilled.locator(".note.local.warn")).to_contain_text("disagrees — anchor check: supported")
    expect(panel.locator(".flag.grounding-warning", has_text="anchor check disagrees")).to_contain_text("on 1 claim")

    # Each supported claim links to its evidence: the trace opens on the highlighted span.
    trace = step.locator("details.trace")
    expect(trace.locator("mark.evidence-span").first).to_be_hidden()
    link = claims.nth(0).locator("a[data-reveal]")
    expect(link).to_contain_text("Evidence in tools__echo, characters 0–24 of 45")
    link.click()
    highlighted = trace.locator("mark.evidence-span", has_text="checkout 5xx ratio 0.042")
    expect(highlighted).to_be_visible()
    expect(highlighted).to_have_attribute("id", re.compile(r"^s\d+-evidence-1$"))

    # Every disclosure is closed until opened, and then shows what was asked and answered.
    for role, prompt_text, answer_text in [
        ("Primary", "Alert on checkout: 5xx rate above 2% on checkout", "checkout-7d9f-x2kqp was OOMKilled"),
        ("Verifier", "Find the cause.", "the investigation holds up"),
        ("Grounding judge", "checkout 5xx ratio 0.042", "2 of 4 claims are supported."),
    ]:
        call = panel.locator(".call", has=page.locator(".call-role", has_text=role))
        prompt = call.locator("details", has=page.locator("summary", has_text="Prompt"))
        answer = call.locator("details", has=page.locator("summary", has_text="Answer"))
        expect(prompt.locator("pre")).to_be_hidden()
        prompt.locator("summary").click()
        expect(prompt.locator("pre")).to_contain_text(prompt_text)
        answer.locator("summary").click()
        expect(answer.locator("pre")).to_contain_text(answer_text)

    how = panel.locator("details.how")
    expect(how.locator("ol")).to_be_hidden()
    how.locator("summary").focus()
    page.keyboard.press("Enter")  # keyboard users open it too
    narrative = how.locator("ol li")
    expect(narrative.first).to_have_text("The agent reported a confidence of 0.90 (S).")
    expect(how).to_contain_text("gave 0.85 (V)")
    expect(how).to_contain_text("found 2 of 4 load-bearing claims supported: G = 0.50")
    expect(how).to_contain_text("With the minimum strategy, trust became min(0.90, 0.85) = 0.85.")
    expect(how).to_contain_text("Grounding is enforced: trust became min(0.85, G) = 0.50.")
    expect(how).to_contain_text("Combined trust 0.50 is below the threshold 0.75: on_low_confidence is escalate")
    configuration = panel.locator("details", has=page.locator("summary", has_text="Step configuration"))
    configuration.locator("summary").click()
    expect(configuration).to_contain_text("Grounding: enforced (G caps trust), judge judge-half")
    expect(configuration).to_contain_text("Deterministic checks: still_firing.")

    # A step with only a verifier still shows how S and V combined.
    triage = page.locator("section.step[data-step=triage]").get_by_test_id("trust-panel")
    expect(triage.locator(".chip")).to_have_count(3)  # S, V, combined
    expect(triage.locator(".chip[data-chip='V'] .chip-value")).to_have_text("0.85")
    triage.locator("details.how summary").click()
    expect(triage.locator("details.how")).to_contain_text("trust became min(0.80, 0.85) = 0.80")


def test_deciding_an_approval_in_the_ui_resumes_the_run(signed_in: Page, live: LiveService) -> None:
    with live.client() as client:
        run_id = client.post("/api/pipelines/approve-me/run", json={"summary": "payments down"}).json()["run_id"]
        wait_for(client, run_id, until=("waiting",))
        pending = len(client.get("/api/approvals").json()["approvals"])
    page = signed_in
    page.goto(f"/ui/runs/{run_id}")
    expect(page.get_by_test_id("pending-badge")).to_have_text(str(pending))
    page.get_by_role("link", name="Decide").click()
    expect(page.locator(".ask")).to_have_text("Roll back payments?")
    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("status")).to_contain_text("Decision recorded: approved by alice")
    page.get_by_role("link", name=run_id[:12]).click()
    expect(page.get_by_test_id("run-status")).to_have_text("completed", timeout=15_000)
    with live.client() as client:
        approval = client.get(f"/api/runs/{run_id}").json()["approvals"][0]
    assert approval["status"] == "approved" and approval["decided_by"] == "alice"


def test_a_sub_pipeline_run_and_its_parent_link_to_each_other(signed_in: Page, live: LiveService) -> None:
    with live.client() as client:
        run_id = client.post("/api/pipelines/umbrella/run", json={"summary": "delegated"}).json()["run_id"]
        parent = wait_for(client, run_id, until=("completed", "failed"))
    assert parent["status"] == "completed", parent
    (child,) = parent["children"]
    page = signed_in
    page.goto(f"/ui/runs/{run_id}")
    link = page.get_by_test_id("child-run")
    expect(link).to_contain_text(f"Sub-pipeline run {child['run_id'][:12]} of sandbox: completed")
    expect(link).to_contain_text("its final combined trust 0.80")
    link.get_by_role("link", name=child["run_id"][:12]).click()
    expect(page.get_by_role("heading", name=re.compile("^sandbox"))).to_be_visible()
    expect(page.get_by_test_id("parent-run")).to_have_text(f"Sub-pipeline of run {run_id[:12]} (its step delegate)")
    page.get_by_test_id("parent-run").get_by_role("link").click()
    expect(page.get_by_role("heading", name=re.compile("^umbrella"))).to_be_visible()


def test_the_calibration_page_draws_each_buckets_reliability_from_its_marks(signed_in: Page, live: LiveService) -> None:
    with live.client() as client:
        for label in ("correct", "correct", "incorrect"):
            run_id = client.post("/api/pipelines/incident/run", json={"summary": "checkout 5xx"}).json()["run_id"]
            wait_for(client, run_id, until=("completed", "escalated", "failed", "aborted"))
            marked = client.post(f"/api/runs/{run_id}/steps/triage/feedback", json={"label": label})
            assert marked.status_code == 201
        (bucket,) = client.get("/api/calibration", params={"step": "triage"}).json()["buckets"]
    report = bucket["report"]
    assert bucket["bucket"]["executor_agent"] == "gateway:triage" and report["n"] >= 3
    page = signed_in
    page.goto("/ui/calibration?step=triage")
    section = page.locator("section.calibration")
    expect(section).to_have_count(1)
    expect(section.get_by_role("heading", level=2)).to_contain_text("triage")
    expect(section).to_contain_text(f"{report['n']} marked steps")
    diagram = section.get_by_role("img", name="Reliability of triage (gateway:triage)")
    expect(diagram).to_be_visible()
    counts = [f"n={row['n']}" for row in report["bins"]]
    expect(diagram.locator("text.count")).to_have_text(counts)
    # Too few marks to validate (n_min is 20): a hollow square, not a filled circle — shape, not colour.
    expect(diagram.locator("rect.bin.unvalidated")).to_have_count(len(report["bins"]))
    expect(diagram.locator("circle.bin")).to_have_count(0)
    expect(section.get_by_test_id("scores")).to_contain_text(f"ECE {report['ece']['value']:.3f}")
    signals = section.locator("table.signals tbody tr")
    expect(signals).to_have_count(4)
    expect(signals.first).to_contain_text("S — self-report")
    page.goto("/ui/calibration?step=no-such-step")
    expect(page.locator(".empty")).to_contain_text("No marked production history matches these filters yet")


def test_the_marking_queue_is_worked_from_the_keyboard(signed_in: Page, live: LiveService) -> None:
    with live.client() as client:
        for _ in range(2):
            run_id = client.post("/api/pipelines/incident/run", json={"summary": "checkout 5xx"}).json()["run_id"]
            wait_for(client, run_id, until=("completed", "escalated", "failed", "aborted"))
    page = signed_in
    page.goto("/ui/marking?pipeline=incident")
    rows = page.locator("#marking-queue tbody tr[tabindex]")
    expect(rows.first).to_be_visible()
    before = rows.count()
    coverage = page.get_by_test_id("coverage")
    to_go = int(coverage.inner_text().split("·")[1].split()[0].replace(",", ""))
    first_run, first_step = rows.first.get_attribute("data-run"), rows.first.get_attribute("data-step")
    page.keyboard.press("j")  # focus the oldest unmarked step
    expect(rows.first).to_be_focused()
    page.keyboard.press("c")  # mark it correct
    expect(rows).to_have_count(before - 1 if before < 50 else before)
    expect(coverage).to_contain_text(f"{to_go - 1:,} to go")
    with live.client() as client:
        marks = client.get(f"/api/runs/{first_run}").json()["feedback"]
    of_step = [(mark["label"], mark["marked_by"]) for mark in marks if mark["step"] == first_step]
    assert of_step == [("correct", "alice")]  # it was unmarked; now it has the one mark just given
    page.goto("/ui/marking?pipeline=incident&stage=testing")
    expect(page.locator(".empty")).to_have_text("Nothing left to mark here.")
    expect(page.locator("main")).to_contain_text("calibration counts production runs only")


def test_a_form_without_its_csrf_token_is_refused(signed_in: Page, live: LiveService) -> None:
    with live.client() as client:
        run_id = client.post("/api/pipelines/approve-me/run").json()["run_id"]
        wait_for(client, run_id, until=("waiting",))
        approval_id = client.get(f"/api/runs/{run_id}").json()["approvals"][0]["id"]
    forged = signed_in.request.post(f"/ui/approvals/{approval_id}/decide", form={"decision": "approve"})
    assert forged.status == 403
    with live.client() as client:
        assert client.get(f"/api/runs/{run_id}").json()["approvals"][0]["status"] == "pending"
        client.post(f"/api/approvals/{approval_id}/reject")


def test_marking_a_step_from_its_page(signed_in: Page, live: LiveService) -> None:
    with live.client() as client:
        run_id = client.post("/webhook?source=alertmanager", json=alert(fingerprint="ui-mark")).json()["run_id"]
        wait_for(client, run_id, until=("escalated",))
    page = signed_in
    page.goto(f"/ui/runs/{run_id}")
    step = page.locator("section.step[data-step=investigate]")
    step.get_by_label("comment").fill("the database claim is made up")
    step.get_by_role("button", name="Partial").click()
    expect(step.locator(".mark-chip")).to_have_text("partial · alice")
    with live.client() as client:
        marks = client.get(f"/api/runs/{run_id}").json()["feedback"]
    assert [(m["step"], m["label"], m["comment"]) for m in marks] == [
        ("investigate", "partial", "the database claim is made up")
    ]


def test_a_running_run_updates_live(signed_in: Page, live: LiveService) -> None:
    with live.client() as client:
        run_id = client.post("/api/pipelines/slow/run").json()["run_id"]
    page = signed_in
    page.goto(f"/ui/runs/{run_id}")
    expect(page.get_by_test_id("run-status")).to_contain_text("running")
    expect(page.get_by_test_id("run-status")).to_have_text("completed", timeout=20_000)
    expect(page.locator("section.step[data-step=notify]")).to_be_visible()


def test_runs_list_filters_and_marks_testing_runs(signed_in: Page, live: LiveService) -> None:
    with live.client() as client:
        run_id = client.post("/api/pipelines/sandbox/run").json()["run_id"]
        wait_for(client, run_id, until=("completed",))
    page = signed_in
    page.goto("/ui/runs")
    page.get_by_label("Pipeline").select_option("sandbox")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"pipeline=sandbox"))
    rows = page.locator("table.runs tbody tr")
    expect(rows.first).to_contain_text("TESTING")
    for text in rows.all_inner_texts():
        assert "sandbox" not in text or "TESTING" in text


def test_a_judge_answer_that_cannot_be_read_is_shown_as_it_came(signed_in: Page, live: LiveService) -> None:
    with live.client() as client:
        run_id = client.post("/api/pipelines/garbled/run").json()["run_id"]
        wait_for(client, run_id, until=("completed",))
    page = signed_in
    page.goto(f"/ui/runs/{run_id}")
    panel = page.get_by_test_id("trust-panel")
    expect(panel.locator(".trust-title")).to_have_text("Trust (shadow)")
    expect(panel.locator(".chip[data-chip='G'] .chip-value")).to_have_text("—")
    judge = panel.locator(".call", has=page.locator(".call-role", has_text="Grounding judge"))
    answer = judge.locator("details", has=page.locator("summary", has_text="Answer"))
    answer.locator("summary").click()
    expect(answer.locator("pre")).to_have_text("I cannot tell from this transcript, sorry.")
    expect(answer.locator(".flag")).to_contain_text("the judge's answer could not be used")
    panel.locator("details.how summary").click()
    expect(panel.locator("details.how")).to_contain_text("Grounding did not compute")


def test_the_api_docs_render_offline_for_a_signed_in_person(signed_in: Page) -> None:
    blocked: list[str] = []
    signed_in.on("console", lambda message: blocked.append(message.text) if message.type == "error" else None)
    signed_in.goto("/api/docs")
    expect(signed_in.get_by_text("/api/runs/{run_id}", exact=True).first).to_be_visible()  # Swagger UI drew the API
    assert not [text for text in blocked if "Content Security Policy" in text or "Failed to load" in text]
