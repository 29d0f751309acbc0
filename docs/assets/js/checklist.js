// Checklists (```checklist blocks): the reader ticks items against something they are reading; the
// ticks are kept in the reader's progress, beside the self-check answers, and shown again next visit.
import { recordAnswer, savedAnswer } from "./progress.js";

document$.subscribe(() => {
  const page = document.querySelector(".lesson-head[data-lesson]")?.dataset.lesson ?? location.pathname;
  document.querySelectorAll("fieldset.checklist[data-checklist]").forEach((box) => checklist(box, page));
});

function checklist(box, page) {
  const key = `checklist:${box.dataset.checklist}`;
  const items = [...box.querySelectorAll("input[type=checkbox]")];
  const status = box.querySelector(".checklist-status");
  const show = () => (status.textContent = `${items.filter((i) => i.checked).length} of ${items.length} checked`);
  const save = () => {
    recordAnswer(page, key, items.filter((i) => i.checked).map((i) => i.value));
    show();
  };
  const saved = savedAnswer(page, key);
  if (Array.isArray(saved)) items.forEach((i) => (i.checked = saved.includes(i.value)));
  items.forEach((i) => (i.onchange = save));
  box.querySelector(".checklist-reset").onclick = () => {
    items.forEach((i) => (i.checked = false));
    save();
  };
  show();
}
