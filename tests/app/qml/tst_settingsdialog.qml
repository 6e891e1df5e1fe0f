import QtQuick
import QtQuick.Controls
import QtTest
import Ember

// The settings dialog in a short window: the scroll bar does not cover the fields.
Item {
    id: root
    width: 720
    height: 480

    QtObject {
        id: mockSettings
        property string device: "auto"
        property int threads: 0
        property int contextLength: 2048
        property int gpuReserveGiB: 0
        property real temperature: 0.8
        property int topK: 40
        property real topP: 0.95
        property real minP: 0.05
        property real repeatPenalty: 1.1
        property int maxTokens: 512
        property string systemPrompt: ""
        property string theme: "system"
        property int fontSize: 14
        property bool apiServerEnabled: false
        property int apiServerPort: 8080
        property string apiServerKey: ""
        property bool apiServerAllowNetwork: false
        function resetToDefaults() {}
    }
    QtObject {
        id: mockInference
        property var devices: ["llvmpipe"]
        property bool modelLoaded: true
        property bool generating: false
        property bool loading: false
    }
    QtObject { id: mockChat; function reloadModel() {} }

    SettingsDialog {
        id: dialog
        parent: root
        settings: mockSettings
        inference: mockInference
        chat: mockChat
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
            compare(mockSettings.topK, 41)
            typeInto(topP, "0.5")
            compare(mockSettings.topP, 0.5)
            typeInto(minP, "0.2")
            compare(mockSettings.minP, 0.2)
            typeInto(penalty, "1.3")
            compare(mockSettings.repeatPenalty, 1.3)
            typeInto(penalty, "7")  // above the field's maximum: not taken
            compare(mockSettings.repeatPenalty, 1.3)
            dialog.close()
            tryCompare(dialog, "visible", false)
        }
    }
}
