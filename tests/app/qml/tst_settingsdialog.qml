import QtQuick
import QtQuick.Controls
import QtTest
import Ember

// The settings dialog in a short window: the scroll bar does not cover the fields; the fields
// write the real Settings.
Item {
    id: root
    width: 720
    height: 480

    // The real settings and controllers (over a fake engine).
    readonly property Settings settings: fixture.settings()
    readonly property InferenceController inference: fixture.inference()
    readonly property ChatController chat: fixture.chat(inference, settings)

    SettingsDialog {
        id: dialog
        parent: root
        settings: root.settings
        inference: root.inference
        chat: root.chat
    }

    TestCase {
        name: "SettingsDialog"
        when: windowShown

        function child(item, name) {
            if (item.objectName === name) return item
            for (let i = 0; i < item.children.length; ++i) {
                const found = child(item.children[i], name)
                if (found) return found
            }
            return null
        }

        function test_scrollBarBesideTheFields() {
            dialog.open()
            tryCompare(dialog, "opened", true)
            const scroll = child(dialog.contentItem, "settingsScroll")
            const grid = child(dialog.contentItem, "settingsGrid")
            const bar = scroll.ScrollBar.vertical
            verify(bar.visible && bar.width > 0, "the dialog scrolls in a short window")
            const barLeft = bar.mapToItem(root, 0, 0).x
            const gridRight = grid.mapToItem(root, grid.width, 0).x
            verify(gridRight <= barLeft, "fields end at " + gridRight + ", the bar starts at " + barLeft)
            dialog.close()
        }

        // The devices the engine lists, between "Auto" and "CPU"; choosing one writes the setting.
        function test_devicesFromTheEngine() {
            root.settings.device = "auto"
            dialog.open()
            tryCompare(dialog, "opened", true)
            const combo = child(dialog.contentItem, "deviceField")
            tryCompare(combo, "count", 3, 30000)  // the worker lists the devices
            compare(Array.from(dialog.deviceNames).join("|"), "Auto|GPU 0: Fake GPU|CPU")
            compare(combo.currentIndex, 0)
            combo.activated(1)
            compare(root.settings.device, "0")
            combo.activated(2)
            compare(root.settings.device, "cpu")
            compare(combo.currentIndex, 2)
            root.settings.device = "auto"
            dialog.close()
            tryCompare(dialog, "visible", false)
        }

        // Typed into a number field and confirmed with Enter.
        function typeInto(field, text) {
            const scroll = child(dialog.contentItem, "settingsScroll")
            scroll.contentItem.contentY = Math.max(0, field.mapToItem(scroll.contentItem.contentItem, 0, 0).y - 40)
            field.forceActiveFocus()
            field.selectAll()
            for (const c of text) keyClick(c)
            keyClick(Qt.Key_Return)
        }

        // The engine's sampling fields: each shows the setting and writes what is typed back.
        function test_samplingFields() {
            root.settings.topK = 40
            root.settings.topP = 0.95
            root.settings.minP = 0.05
            root.settings.repeatPenalty = 1.1
            dialog.open()
            tryCompare(dialog, "opened", true)
            const topK = child(dialog.contentItem, "topKField")
            const topP = child(dialog.contentItem, "topPField")
            const minP = child(dialog.contentItem, "minPField")
            const penalty = child(dialog.contentItem, "repeatPenaltyField")
            verify(topK && topP && minP && penalty, "top-k, top-p, min-p and repeat penalty fields")
            compare(topK.value, 40)
            compare(topP.text, "0.95")
            compare(minP.text, "0.05")
            compare(penalty.text, "1.10")

            topK.forceActiveFocus()
            keyClick(Qt.Key_Up)
            compare(root.settings.topK, 41)
            typeInto(topP, "0.5")
            compare(root.settings.topP, 0.5)
            typeInto(minP, "0.2")
            compare(root.settings.minP, 0.2)
            typeInto(penalty, "1.3")
            compare(root.settings.repeatPenalty, 1.3)
            typeInto(penalty, "7")  // above the field's maximum: not taken
            compare(root.settings.repeatPenalty, 1.3)
            dialog.close()
            tryCompare(dialog, "visible", false)
        }
    }
}
