import QtQuick
import QtTest
import Ember

// The performance overlay against mock settings and a mock PerfMonitor: the toolbar button and
// Ctrl+Shift+P toggle it through the setting, and its rows follow the metrics.
Item {
    id: root
    width: 700
    height: 600

    QtObject {
        id: mockSettings
        property bool perfOverlay: false
    }

    QtObject {
        id: mockMetrics
        property bool generating: true
        property real tokensPerSecond: 42.46
        property real responseTokensPerSecond: 38.21
        property int generatedTokens: 64
        property real promptTokensPerSecond: 480
        property int promptTokens: 12
        property int promptTokensTotal: 12
        property string fallbackReason: ""
        property real timeToFirstTokenMs: 125.4
        property int contextUsed: 76
        property int contextSize: 2048
        property bool modelLoaded: true
        property string backend: "vulkan"
        property string device: "llvmpipe (LLVM 15.0.6, 256 bits)"
        property real memoryUsed: 300 * 1024 * 1024
        property real memoryBudget: 2 * 1024 * 1024 * 1024
        property string memorySource: "VK_EXT_memory_budget"
        property var history: [0, 10, 40, 25]
        property int historyCapacity: 120
    }

    PerfOverlayButton {
        id: button
        settings: mockSettings
    }

    PerfOverlay {
        id: overlay
        y: 60
        width: 300
        metrics: mockMetrics
        visible: mockSettings.perfOverlay
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

        function init() { mockSettings.perfOverlay = false }

        function test_buttonToggles() {
            verify(!overlay.visible)
            verify(!button.checked)
            mouseClick(button)
            verify(mockSettings.perfOverlay, "the choice goes to the setting")
            verify(overlay.visible)
            verify(button.checked)
            mouseClick(button)
            verify(!mockSettings.perfOverlay)
            verify(!overlay.visible)
            verify(!button.checked)
        }

        function test_shortcutToggles() {
            keyClick(Qt.Key_P, Qt.ControlModifier | Qt.ShiftModifier)
            verify(mockSettings.perfOverlay)
            verify(overlay.visible)
            verify(button.checked, "the button follows a change made elsewhere")
            keyClick(Qt.Key_P, Qt.ControlModifier | Qt.ShiftModifier)
            verify(!overlay.visible)
            keyClick(Qt.Key_P, Qt.ControlModifier)  // not the shortcut
            verify(!overlay.visible)
        }

        function test_valuesFollowTheMetrics() {
            mockSettings.perfOverlay = true
            compare(text("perfLiveRate"), "42.5")
            compare(text("perfResponseRate"), "38.2 tok/s")
            compare(text("perfState"), "generating")
            compare(rowText("perfPrompt"), "12 tok · 480 tok/s")
            compare(rowText("perfTtft"), "125 ms")
            compare(rowText("perfTokens"), "64")
            compare(rowText("perfContext"), "76 / 2048")
            compare(rowText("perfBackend"), "VULKAN")
            compare(rowText("perfDevice"), "llvmpipe (LLVM 15.0.6, 256 bits)")
            compare(child(overlay, "perfMemory").label, "GPU memory")
            compare(rowText("perfMemory"), "300.0 MiB / 2.00 GiB")
            compare(text("perfMemorySource"), "VK_EXT_memory_budget")
            fuzzyCompare(child(overlay, "perfMemoryBar").fraction, 300 / 2048, 1e-6)
            fuzzyCompare(child(overlay, "perfContextBar").fraction, 76 / 2048, 1e-6)
            compare(child(overlay, "perfSparkline").maxValue, 40)
            compare(text("perfSparklineCaption"), "last 60 s · peak 40.0 tok/s")

            // Generation ended, on the CPU: the numbers stay, the labels follow.
            mockMetrics.generating = false
            mockMetrics.tokensPerSecond = 150.2
            mockMetrics.generatedTokens = 200
            mockMetrics.backend = "cpu"
            mockMetrics.memorySource = "process RSS"
            mockMetrics.memoryUsed = 1.5 * 1024 * 1024 * 1024
            mockMetrics.history = [0, 150.2, 0]
            compare(text("perfState"), "idle")
            compare(text("perfLiveRate"), "150")
            compare(rowText("perfTokens"), "200")
            compare(child(overlay, "perfMemory").label, "Memory")
            compare(rowText("perfMemory"), "1.50 GiB / 2.00 GiB")
            compare(text("perfMemorySource"), "process RSS")
            compare(child(overlay, "perfSparkline").maxValue, 150.2)
        }

        function test_promptTotalAndEvaluated() {
            // A regenerate: the prompt came from the cache but for one token.
            mockSettings.perfOverlay = true
            mockMetrics.promptTokensTotal = 120
            mockMetrics.promptTokens = 1
            compare(rowText("perfPrompt"), "120 tok (1 new) · 480 tok/s")
            mockMetrics.promptTokensTotal = 12
            mockMetrics.promptTokens = 12
            compare(rowText("perfPrompt"), "12 tok · 480 tok/s")
        }

        function test_fallbackReasonShown() {
            mockSettings.perfOverlay = true
            verify(!child(overlay, "perfFallback").visible)
            mockMetrics.fallbackReason = "no Vulkan device"
            verify(child(overlay, "perfFallback").visible)
            compare(text("perfFallback"), "On the CPU: no Vulkan device")
            mockMetrics.fallbackReason = ""
        }

        function test_unknownValuesShowDashes() {
            mockSettings.perfOverlay = true
            const saved = [mockMetrics.tokensPerSecond, mockMetrics.promptTokensPerSecond,
                           mockMetrics.timeToFirstTokenMs, mockMetrics.memoryBudget, mockMetrics.contextSize]
            mockMetrics.tokensPerSecond = 0
            mockMetrics.promptTokensPerSecond = 0
            mockMetrics.timeToFirstTokenMs = -1
            mockMetrics.memoryBudget = 0
            mockMetrics.contextSize = 0
            compare(text("perfLiveRate"), "—")
            compare(rowText("perfPrompt"), "12 tok", "the count without a rate")
            mockMetrics.promptTokens = 0
            mockMetrics.promptTokensTotal = 0
            compare(rowText("perfPrompt"), "—")
            mockMetrics.promptTokens = 12
            mockMetrics.promptTokensTotal = 12
            compare(rowText("perfTtft"), "—")
            compare(rowText("perfMemory"), "—")
            compare(rowText("perfContext"), "—")
            compare(child(overlay, "perfMemoryBar").fraction, 0)
            mockMetrics.tokensPerSecond = saved[0]
            mockMetrics.promptTokensPerSecond = saved[1]
            mockMetrics.timeToFirstTokenMs = saved[2]
            mockMetrics.memoryBudget = saved[3]
            mockMetrics.contextSize = saved[4]
        }
    }
}
