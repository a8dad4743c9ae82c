/* jobs_gantt.c: the Gantt chart of a simulated run, as SVG written directly (no plotting
 * library): time runs left to right; each region is a band with one row per GPU; a job's box
 * covers the GPUs it held for as long as it held them, coloured by job (golden-angle hues, so
 * neighbours differ), with its name when the box has room and a tooltip with the details.
 */
#include "sim/jobs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LEFT 120.0
#define PLOT_W 1000.0
#define TOP 48.0
#define BAND_GAP 8.0

typedef struct chart {
  FILE *out;
  double t0, t1, px_per_gpu;
  double *band_top; /* per region */
} chart;

static double xpos(const chart *c, double t) {
  return LEFT + PLOT_W * (t - c->t0) / (c->t1 - c->t0);
}

/* Writes s with XML's special characters escaped. */
static void put_text(FILE *out, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '&':
      fputs("&amp;", out);
      break;
    case '<':
      fputs("&lt;", out);
      break;
    case '>':
      fputs("&gt;", out);
      break;
    case '"':
      fputs("&quot;", out);
      break;
    default:
      fputc(*s, out);
    }
  }
}

static double hue(int job) {
  return fmod(job * 137.508, 360.0);
}

/* A tick step in hours giving at most about ten ticks. */
static double tick_hours(double span_h) {
  static const double steps[] = {0.25, 0.5, 1, 2, 3, 6, 12, 24, 48, 72, 168, 336, 720};
  for (size_t i = 0; i < CORE_ARRAY_LEN(steps); i++)
    if (span_h / steps[i] <= 10) return steps[i];
  return ceil(span_h / 10 / 720) * 720;
}

static void axis(const chart *c, double bottom) {
  double span_h = (c->t1 - c->t0) / 3600, step = tick_hours(span_h);
  for (double h = 0; h <= span_h + 1e-9; h += step) {
    double x = xpos(c, c->t0 + h * 3600);
    fprintf(c->out, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#ccc'/>\n", x, TOP, x,
            bottom);
    if (step >= 24)
      fprintf(c->out, "<text x='%.1f' y='%.1f' class='t'>%gd</text>\n", x, bottom + 14, h / 24);
    else
      fprintf(c->out, "<text x='%.1f' y='%.1f' class='t'>%gh</text>\n", x, bottom + 14, h);
  }
}

static void bands(const chart *c, const plan_cluster *cl) {
  for (int r = 0; r < cl->nregions; r++) {
    double h = cl->regions[r].gpus * c->px_per_gpu;
    fprintf(c->out, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='#f4f4f4'/>\n", LEFT,
            c->band_top[r], PLOT_W, h);
    fprintf(c->out, "<text x='%.1f' y='%.1f' class='r'>", LEFT - 6, c->band_top[r] + h / 2 + 4);
    put_text(c->out, cl->regions[r].name);
    fprintf(c->out, " (%d)</text>\n", cl->regions[r].gpus);
  }
}

static void span_box(const chart *c, const plan_scenario *sc, const sim_span *s) {
  double x = xpos(c, s->t0), w = CORE_MAX(xpos(c, s->t1) - x, 0.5);
  double y = c->band_top[s->region] + s->first * c->px_per_gpu, h = s->count * c->px_per_gpu;
  fprintf(c->out, "<rect x='%.2f' y='%.2f' width='%.2f' height='%.2f' fill='hsl(%.0f,65%%,55%%)'>",
          x, y, w, h, hue(s->job));
  fprintf(c->out, "<title>");
  put_text(c->out, sc->jobs[s->job].name);
  fprintf(c->out, ": %d GPUs of ", s->count);
  put_text(c->out, sc->c.regions[s->region].name);
  fprintf(c->out, ", %.2f h to %.2f h</title></rect>\n", s->t0 / 3600, s->t1 / 3600);
  if (w > 7.0 * (double)strlen(sc->jobs[s->job].name) && h >= 10) {
    fprintf(c->out, "<text x='%.1f' y='%.1f' class='j'>", x + w / 2, y + h / 2 + 4);
    put_text(c->out, sc->jobs[s->job].name);
    fprintf(c->out, "</text>\n");
  }
}

static void legend(const chart *c, const plan_scenario *sc, double y) {
  double x = LEFT;
  for (int j = 0; j < sc->njobs; j++) {
    double w = 24 + 7.0 * (double)strlen(sc->jobs[j].name);
    if (x + w > LEFT + PLOT_W) {
      x = LEFT;
      y += 18;
    }
    fprintf(c->out, "<rect x='%.1f' y='%.1f' width='12' height='12' fill='hsl(%.0f,65%%,55%%)'/>",
            x, y, hue(j));
    fprintf(c->out, "<text x='%.1f' y='%.1f' class='l'>", x + 16, y + 10);
    put_text(c->out, sc->jobs[j].name);
    fprintf(c->out, "</text>\n");
    x += w;
  }
}

tern_status sim_jobs_gantt_svg(const plan_scenario *sc, const sim_jobs_result *r, FILE *out,
                               core_err *err) {
  const plan_cluster *cl = &sc->c;
  int total = plan_cluster_total_gpus(cl);
  chart c = {out, INFINITY, 0, CORE_MIN(4.0, CORE_MAX(0.25, 480.0 / total)), NULL};
  c.band_top = malloc((size_t)cl->nregions * sizeof *c.band_top);
  if (c.band_top == NULL) return core_err_set(err, TERN_ERR_NOMEM, "Gantt chart");
  for (int i = 0; i < r->nspans; i++) {
    c.t0 = CORE_MIN(c.t0, r->spans[i].t0);
    c.t1 = CORE_MAX(c.t1, r->spans[i].t1);
  }
  if (!(c.t1 > c.t0)) { /* no spans: an empty chart of one second */
    c.t0 = 0;
    c.t1 = 1;
  }
  double y = TOP;
  for (int k = 0; k < cl->nregions; k++) {
    c.band_top[k] = y;
    y += cl->regions[k].gpus * c.px_per_gpu + BAND_GAP;
  }
  double legend_y = y + 28, height = legend_y + 18 * (1 + sc->njobs / 6) + 20;
  fprintf(out,
          "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
          "font-family='sans-serif' font-size='11'>\n",
          LEFT + PLOT_W + 20, height);
  fprintf(out, "<style>.r{text-anchor:end}.t{text-anchor:middle;fill:#555}"
               ".j{text-anchor:middle;fill:#fff;font-size:10px}.l{fill:#222}</style>\n");
  fprintf(out,
          "<rect width='100%%' height='100%%' fill='white'/>\n<text x='%.0f' y='22' "
          "font-size='14'>",
          LEFT);
  put_text(out, r->policy->name);
  fprintf(out,
          ": average JCT %.1f h, makespan %.1f h, electricity USD %.0f, GPU use %.0f%%"
          "</text>\n<text x='%.0f' y='38' fill='#555'>",
          r->avg_jct / 3600, r->makespan / 3600, r->usd, 100 * r->gpu_util, LEFT);
  put_text(out, sc->source);
  fprintf(out, "</text>\n");
  bands(&c, cl);
  axis(&c, y - BAND_GAP);
  for (int i = 0; i < r->nspans; i++)
    span_box(&c, sc, &r->spans[i]);
  legend(&c, sc, legend_y);
  fprintf(out, "</svg>\n");
  free(c.band_top);
  return ferror(out) ? core_err_set(err, TERN_ERR_SYSTEM, "writing the Gantt chart failed")
                     : TERN_OK;
}
