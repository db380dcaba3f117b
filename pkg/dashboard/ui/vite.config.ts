// The dashboard's front end, built into ../assets/app, which the Go package
// embeds (pkg/dashboard/assets.go). make dashboard runs this build.
import { defineConfig } from "vite";

export default defineConfig({
  base: "/",
  build: {
    outDir: "../assets/app",
    // The output sits outside this folder; it holds nothing but the build.
    emptyOutDir: true,
    // No inline scripts or data: URLs for the Content-Security-Policy.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
  },
});
