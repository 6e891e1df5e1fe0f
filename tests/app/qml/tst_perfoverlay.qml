import QtQuick
import QtTest
import Ember

// The performance overlay over the real Settings and a real PerfMonitor (fed through its slots, on
// the test's clock): the toolbar button and Ctrl+Shift+P toggle it through the setting, and its
// rows follow the metrics.
Item {
    id: root
    width: 700
    height: 600

    readonly property Settings settings: fixture.settings()
    readonly property PerfMonitor metrics: fixture.perf()
    readonly property real mib: 1024 * 1024
    readonly property real gib: 1024 * 1024 * 1024

    PerfOverlayButton {
        id: button
        settings: root.settings
    }

    PerfOverlay {
        id: overlay
        y: 60
        width: 300
        metrics: root.metrics
        visible: root.settings.perfOverlay
    }

    TestCase {
        name: "PerfOverlay"
        when: windowShown

        function child(item, name) {
            if (item.objectName === name) return item
            for (let i = 0; i < item.children.length; ++i) {
                const found = child(item.children[i], name)
                if (found) return found
            }
            return null
        }
        function rowText(name) { return child(overlay, name).valueItem.text }
        function text(name) { return child(overlay, name).text }


        function init() { root.settings.perfOverlay = false }

        // A model on the GPU, and a response under way: 12 prompt tokens, the first token
        // 125 ms after the start, the second 25 ms later (40 tok/s).
        function generate(backend, fallbackReason) {
            root.metrics.setModel("/models/a.gguf", backend, "llvmpipe (LLVM 15.0.6, 256 bits)", 2048,
                                  fallbackReason)
            root.metrics.onMemorySample(300 * root.mib, 2 * root.gib, "VK_EXT_memory_budget")
            fixture.setTime(1000)
            root.metrics.onGenerationStarted()
            root.metrics.onPrompt(12, 12)
            root.metrics.onTokens([1125, 1150])
            fixture.setTime(1150)
            root.metrics.refresh()
        }

        function test_buttonToggles() {
            verify(!overlay.visible)
            verify(!button.checked)
            mouseClick(button)
            verify(root.settings.perfOverlay, "the choice goes to the setting")
            verify(overlay.visible)
            verify(button.checked)
            mouseClick(button)
            verify(!root.settings.perfOverlay)
            verify(!overlay.visible)
            verify(!button.checked)
        }

        function test_shortcutToggles() {
            keyClick(Qt.Key_P, Qt.ControlModifier | Qt.ShiftModifier)
            verify(root.settings.perfOverlay)
            verify(overlay.visible)
            verify(button.checked, "the button follows a change made elsewhere")
            keyClick(Qt.Key_P, Qt.ControlModifier | Qt.ShiftModifier)
            verify(!overlay.visible)
            keyClick(Qt.Key_P, Qt.ControlModifier)  // not the shortcut
            verify(!overlay.visible)
        }

        function test_valuesFollowTheMetrics() {
            root.settings.perfOverlay = true
            generate("vulkan", "")
            compare(text("perfLiveRate"), "40.0")
            compare(text("perfResponseRate"), "40.0 tok/s")
            compare(text("perfState"), "generating")
            compare(rowText("perfPrompt"), "12 tok", "no rate before the worker's figures")
            compare(rowText("perfTtft"), "125 ms")
            compare(rowText("perfTokens"), "2")
            compare(rowText("perfContext"), "14 / 2048")
            compare(rowText("perfBackend"), "VULKAN")
            compare(rowText("perfDevice"), "llvmpipe (LLVM 15.0.6, 256 bits)")
            compare(child(overlay, "perfMemory").label, "GPU memory")
            compare(rowText("perfMemory"), "300.0 MiB / 2.00 GiB")
            compare(text("perfMemorySource"), "VK_EXT_memory_budget")
            fuzzyCompare(child(overlay, "perfMemoryBar").fraction, 300 / 2048, 1e-6)
            fuzzyCompare(child(overlay, "perfContextBar").fraction, 14 / 2048, 1e-6)
            const spark = child(overlay, "perfSparkline")
            compare(spark.values.length, root.metrics.history.length)
            compare(spark.maxValue, root.metrics.history.length ? Math.max.apply(null, root.metrics.history) : 0)
            compare(text("perfSparklineCaption"), "last 60 s · peak %1 tok/s".arg(overlay.rate(spark.maxValue)))

            // The response ended with the worker's figures; the numbers stay, the state follows.
            fixture.finish(root.metrics, 64, 38.21, 125.4, 12, 12, 25, 76)
            compare(text("perfState"), "idle")
            compare(text("perfLiveRate"), "40.0")
            compare(text("perfResponseRate"), "38.2 tok/s")
            compare(rowText("perfPrompt"), "12 tok · 480 tok/s")
            compare(rowText("perfTokens"), "64")
            compare(rowText("perfContext"), "76 / 2048")

            // On the CPU: the labels follow.
            root.metrics.setModel("/models/a.gguf", "cpu", "CPU", 2048, "")
            root.metrics.onMemorySample(1.5 * root.gib, 2 * root.gib, "process RSS")
            compare(rowText("perfBackend"), "CPU")
            compare(child(overlay, "perfMemory").label, "Memory")
            compare(rowText("perfMemory"), "1.50 GiB / 2.00 GiB")
            compare(text("perfMemorySource"), "process RSS")
        }

        function test_promptTotalAndEvaluated() {
            // A regenerate: the prompt came from the cache but for one token.
            root.settings.perfOverlay = true
            generate("vulkan", "")
            fixture.finish(root.metrics, 64, 38.21, 125.4, 120, 1, 2, 185)
            compare(rowText("perfPrompt"), "120 tok (1 new) · 500 tok/s")
            generate("vulkan", "")
            fixture.finish(root.metrics, 64, 38.21, 125.4, 12, 12, 25, 76)
            compare(rowText("perfPrompt"), "12 tok · 480 tok/s")
        }

        function test_fallbackReasonShown() {
            root.settings.perfOverlay = true
            generate("vulkan", "")
            verify(!child(overlay, "perfFallback").visible)
            generate("cpu", "no Vulkan device")
            verify(child(overlay, "perfFallback").visible)
            compare(text("perfFallback"), "On the CPU: no Vulkan device")
        }

        function test_unknownValuesShowDashes() {
            root.settings.perfOverlay = true
            generate("vulkan", "")
            // Another model, nothing measured on it yet.
            root.metrics.setModel("/models/b.gguf", "vulkan", "llvmpipe", 0, "")
            root.metrics.onMemorySample(0, 0, "")
            compare(text("perfLiveRate"), "—")
            compare(rowText("perfPrompt"), "—")
            compare(rowText("perfTtft"), "—")
            compare(rowText("perfMemory"), "—")
            compare(rowText("perfContext"), "—")
            compare(child(overlay, "perfMemoryBar").fraction, 0)
            // A response whose prompt has no rate yet: the count alone.
            fixture.setTime(5000)
            root.metrics.onGenerationStarted()
            root.metrics.onPrompt(12, 12)
            compare(rowText("perfPrompt"), "12 tok")
            compare(text("perfLiveRate"), "—")
        }
    }
}
