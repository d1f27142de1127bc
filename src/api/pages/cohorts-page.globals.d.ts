// What the cohort page's script (the *.client.js modules) finds besides the DOM: Chart.js's UMD
// build, which its own <script> (/cohorts/chart.js, loaded before the page's) sets as a global.
import type { Chart as ChartJs } from 'chart.js';

declare global {
  const Chart: typeof ChartJs;
}
