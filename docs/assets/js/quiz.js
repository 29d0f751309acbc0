// Self-check questions: immediate feedback, an explanation for every option, answers kept in the
// reader's progress and shown again on the next visit.
import { recordAnswer, savedAnswer } from "./progress.js";

document$.subscribe(() => {
  const lesson = document.querySelector(".lesson-head[data-lesson]")?.dataset.lesson;
  if (!lesson) return;
  document.querySelectorAll(".quiz-q").forEach((q) => (q.dataset.type === "number" ? number(q, lesson) : choice(q, lesson)));
});

function number(q, lesson) {
  const input = q.querySelector("input");
  const check = () => {
    const text = input.value.replace(/[,_\s]/g, "");
    const given = text.endsWith("%") ? Number(text.slice(0, -1)) / 100 : Number(text); // 90% is 0.9
    if (input.value.trim() === "" || !Number.isFinite(given)) return feedback(q, null, "Enter a number, e.g. 131072, 1.3e5 or 45%.");
    const answer = Number(q.dataset.answer);
    const near = (x) => Math.abs(x - answer) <= Number(q.dataset.tolerance) * Math.abs(answer);
    const correct = near(given);
    // A share typed as a percentage without its sign (90 for 0.904) is told how to write it.
    const hint = !correct && near(given / 100) ? ` It is a fraction: write ${text}% or ${given / 100}.` : "";
    feedback(q, correct, correct ? "Correct." : `Not quite: the answer is ${answer.toLocaleString("en-US")}.${hint}`);
    input.setAttribute("aria-invalid", String(!correct));
    recordAnswer(lesson, q.dataset.question, { value: input.value, correct });
  };
  q.querySelector(".quiz-check").onclick = check;
  input.onkeydown = (event) => event.key === "Enter" && check();
  const saved = savedAnswer(lesson, q.dataset.question);
  if (saved) {
    input.value = saved.value;
    check();
  }
}

function choice(q, lesson) {
  const radios = [...q.querySelectorAll("input[type=radio]")];
  const pick = (radio) => {
    const correct = radio.dataset.correct === "true";
    q.querySelectorAll(".quiz-why").forEach((why) => (why.hidden = false));
    radios.forEach((r) => r.closest(".quiz-option").classList.toggle("quiz-correct", r.dataset.correct === "true"));
    feedback(q, correct, correct ? "Correct. Why each option is right or wrong:" : "Not this one. Why each option is right or wrong:");
    recordAnswer(lesson, q.dataset.question, { value: radio.value, correct });
  };
  radios.forEach((radio) => (radio.onchange = () => pick(radio)));
  const saved = savedAnswer(lesson, q.dataset.question);
  const radio = saved && radios.find((r) => r.value === saved.value);
  if (radio) {
    radio.checked = true;
    pick(radio);
  }
}

function feedback(q, correct, text) {
  const box = q.querySelector(".quiz-feedback");
  box.textContent = text;
  box.dataset.result = correct === null ? "" : correct ? "correct" : "incorrect";
  const explanation = q.querySelector(".quiz-explanation");
  if (explanation) explanation.hidden = correct === null;
}
