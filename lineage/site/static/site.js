// Attention Lineage, the static site: draw each page's figures from the JSON in the page, one step for every
// animation (Play, the slider, J / K), the step and the view in the URL hash, Shift+N / Shift+P between pages.
(function () {
  "use strict";

  function hashParams() {
    return new URLSearchParams(window.location.hash.slice(1));
  }

  function setHash(changes) {
    const params = hashParams();
    Object.keys(changes).forEach(function (name) {
      if (changes[name] === null) params.delete(name);
      else params.set(name, String(changes[name]));
    });
    const text = params.toString();
    history.replaceState(null, "", text ? "#" + text : window.location.pathname + window.location.search);
  }

  function presenting() {
    return hashParams().get("view") === "present";
  }

  function charts() {
    return Array.prototype.slice.call(document.querySelectorAll("div.chart"));
  }

  function animated(gd) {
    return gd.layout && gd.layout.sliders && gd.layout.sliders.length && gd.layout.sliders[0].steps;
  }

  function frameName(gd, i) {
    return gd.layout.sliders[0].steps[i].args[0][0];
  }

  function currentStep(gd) {
    return gd.layout.sliders[0].active || 0;
  }

  // Show frame ``i`` of every animation on the page (clamped to each one's frames), at once.
  function showStep(i) {
    const shown = [];
    charts().forEach(function (gd) {
      if (!animated(gd)) return;
      const steps = gd.layout.sliders[0].steps.length;
      const j = Math.max(0, Math.min(steps - 1, i));
      shown.push(j);
      window.Plotly.animate(gd, [frameName(gd, j)], {
        mode: "immediate",
        frame: { duration: 0, redraw: true },
        transition: { duration: 0 },
      });
    });
    if (shown.length) setHash({ step: shown[0] });
  }

  // In the next animation frame: Plotly's slider moves its handle at once but animates in the next animation frame,
  // which would override a step started before it (J pressed as a scrub lands was lost that way in the app).
  function step(delta) {
    window.requestAnimationFrame(function () {
      const gd = charts().filter(animated)[0];
      if (gd) showStep(currentStep(gd) + delta);
    });
  }

  function spec(div) {
    const present = presenting() && document.getElementById(div.id + "-present");
    return JSON.parse(document.getElementById(div.id + (present ? "-present" : "-reading")).textContent);
  }

  const config = JSON.parse(document.getElementById("plot-config").textContent);

  function draw() {
    const present = presenting();
    document.documentElement.classList.toggle("present", present);
    const button = document.querySelector("button.view");
    button.textContent = present ? "Reading view" : "Presenter view";
    button.setAttribute("aria-pressed", present ? "true" : "false");
    document.querySelectorAll("details.prose").forEach(function (d) {
      d.open = !present;
    });
    const wanted = hashParams().get("step");
    const drawn = charts().map(function (div) {
      const fig = spec(div);
      window.Plotly.purge(div);
      return window.Plotly.newPlot(div, { data: fig.data, layout: fig.layout, frames: fig.frames, config: config })
        .then(function () {
          div.setAttribute("data-drawn", "1");
          div.on("plotly_animated", function () {
            setHash({ step: currentStep(div) });
          });
          div.on("plotly_sliderchange", function (event) {
            setHash({ step: event.step._index });
          });
        });
    });
    return Promise.all(drawn).then(function () {
      if (wanted !== null && /^\d+$/.test(wanted)) showStep(parseInt(wanted, 10));
      document.body.setAttribute("data-ready", "1");
    });
  }

  function go(rel) {
    const link = document.querySelector('link[rel="' + rel + '"]');
    if (!link) return;
    const view = presenting() ? "#view=present" : "";
    window.location.href = link.getAttribute("href") + view;
  }

  document.addEventListener("keydown", function (event) {
    const target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
    const key = event.key.toLowerCase();
    if (event.shiftKey && key === "n") go("next");
    else if (event.shiftKey && key === "p") go("prev");
    else if (!event.shiftKey && key === "j") step(-1);
    else if (!event.shiftKey && key === "k") step(1);
    else return;
    event.preventDefault();
  });

  // The tour's links keep the view: a presenter walks the whole lecture in the presenter view.
  document.addEventListener("click", function (event) {
    const a = event.target.closest && event.target.closest("a[href$='.html']");
    if (a && presenting() && !a.getAttribute("href").includes("#")) {
      event.preventDefault();
      window.location.href = a.getAttribute("href") + "#view=present";
    }
  });

  document.querySelector("button.view").addEventListener("click", function () {
    setHash({ view: presenting() ? null : "present" });
    draw();
  });

  window.addEventListener("hashchange", draw);
  draw();
})();
