// The reader's progress, in this browser only (localStorage): lessons completed, the last lesson
// opened, self-check answers. Unreadable saved data is ignored with a notice, never trusted.
import { tag } from "./dom.js";

const KEY = "llm-course:progress:v1";
let notice = "";
let state = load();

function empty() {
  return { completed: {}, last: null, answers: {} };
}

function load() {
  let raw = null;
  try {
    raw = localStorage.getItem(KEY);
    if (raw === null) return empty();
    const data = JSON.parse(raw);
    const isMap = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
    if (!isMap(data) || !isMap(data.completed) || !isMap(data.answers) || !(data.last === null || typeof data.last === "string")) throw new Error();
    return data;
  } catch {
    if (raw !== null) notice = "Your saved progress in this browser could not be read, so it was ignored.";
    return empty();
  }
}

function save() {
  try {
    localStorage.setItem(KEY, JSON.stringify(state));
  } catch {
    notice = "This browser does not let the course save progress (storage is blocked or full).";
  }
}

export function recordAnswer(lesson, question, answer) {
  state.answers[lesson] = { ...state.answers[lesson], [question]: answer };
  save();
}

export function savedAnswer(lesson, question) {
  return state.answers[lesson]?.[question];
}

document$.subscribe(() => {
  const head = document.querySelector(".lesson-head[data-lesson]");
  if (head) {
    state.last = head.dataset.lesson;
    save();
  }
  showNotice();
  document.querySelectorAll(".lesson-complete[data-lesson]").forEach(completion);
  if (document.querySelector("[data-course-completed]")) courseMap();
});

function showNotice() {
  const content = document.querySelector(".md-content__inner");
  if (!notice || !content || content.querySelector(".course-notice")) return;
  content.prepend(tag("p", { class: "course-notice", role: "status" }, notice));
}

function completion(box) {
  const id = box.dataset.lesson;
  const button = box.querySelector("button");
  const status = box.querySelector("[role=status]");
  const show = () => {
    const done = Boolean(state.completed[id]);
    button.setAttribute("aria-pressed", String(done));
    button.textContent = done ? "Completed ✓ (undo)" : "Mark lesson complete";
    status.textContent = done ? `Completed on ${new Date(state.completed[id]).toLocaleDateString()}.` : "";
  };
  button.onclick = () => {
    if (state.completed[id]) delete state.completed[id];
    else state.completed[id] = new Date().toISOString();
    save();
    show();
  };
  show();
}

function courseMap() {
  const cards = [...document.querySelectorAll(".course-card[data-lesson]")];
  const ids = cards.map((card) => card.dataset.lesson);
  // "n / 14 completed" and the time left count the numbered lessons; frontier pages are marked but not counted.
  const core = cards.filter((card) => card.hasAttribute("data-core"));
  const done = core.filter((card) => state.completed[card.dataset.lesson]);
  document.querySelector("[data-course-completed]").textContent = String(done.length);
  document.querySelector("[data-course-meter]").value = done.length;
  const left = core.filter((card) => !state.completed[card.dataset.lesson]).reduce((sum, card) => sum + Number(card.dataset.minutes), 0);
  document.querySelector("[data-course-left]").textContent = String(left);
  const resume = state.last && ids.includes(state.last) && !state.completed[state.last];
  const next = resume ? state.last : ids.find((id) => !state.completed[id]);
  for (const card of cards) {
    const id = card.dataset.lesson;
    card.querySelector(".course-card-done").hidden = !state.completed[id];
    card.toggleAttribute("data-done", Boolean(state.completed[id]));
    card.toggleAttribute("data-next", id === next);
  }
  // The journey marks the reader's position: the chapter of the lesson to read next.
  for (const step of document.querySelectorAll(".course-journey li[data-lessons]")) {
    const lessons = step.dataset.lessons.split(" ");
    const here = lessons.includes(next);
    if (here) step.setAttribute("aria-current", "step");
    else step.removeAttribute("aria-current");
    step.querySelector(".course-journey-here").hidden = !here;
    step.toggleAttribute("data-done", lessons.every((id) => state.completed[id]));
  }
  const started = state.last !== null || Object.keys(state.completed).length > 0;
  const target = cards[ids.indexOf(next ?? ids[0])].querySelector("h3 a");
  const link = document.querySelector("[data-course-next-link]");
  document.querySelector("[data-course-next-label]").textContent =
    next === undefined ? "All lessons completed. Start again with" : started ? "Continue with" : "Begin with";
  link.href = target.href;
  link.textContent = target.textContent;
  document.querySelector("[data-course-reset]").onclick = () => {
    if (!confirm("Forget every completed lesson and self-check answer saved in this browser?")) return;
    state = empty();
    save();
    courseMap();
  };
}
