import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Ember

// The right side of the window: header (title, model, backend), banners, messages, input.
Page {
    id: root
    required property ChatController chat
    required property InferenceController inference
    property InstalledModelModel models: null  // ModelLibrary.installed: the model menu's list
    required property Settings settings
    property PerfMonitor perf: null  // the performance overlay's numbers
    property ApiServerStatus apiServer: null  // the local API server: its indicator in the header
    signal apiServerSettingsRequested()
    signal openModelRequested()
    signal manageModelsRequested()
    Theme { id: theme; dark: root.Material.theme === Material.Dark }

    header: ToolBar {
        Material.background: theme.header
        Material.foreground: theme.headerText
        Material.elevation: 1
        RowLayout {
            anchors.fill: parent
            anchors.leftMargin: 16
            anchors.rightMargin: 8
            Label {
                objectName: "conversationTitle"
                text: root.chat.currentTitle.length ? root.chat.currentTitle : qsTr("New conversation")
                font.pixelSize: 16
                font.bold: true
                elide: Text.ElideRight
                Layout.fillWidth: true
                // The title keeps room in a narrow window; the labels beside it elide first.
                Layout.minimumWidth: Math.min(implicitWidth, 140)
            }
            Label {
                objectName: "backendLabel"
                visible: root.inference.modelLoaded
                text: root.inference.backend.toUpperCase() + " · " + root.inference.device
                      + (root.inference.lastStats.length ? " · " + root.inference.lastStats : "")
                color: Material.hintTextColor
                elide: Text.ElideRight
                Layout.fillWidth: true
                Layout.minimumWidth: 0
                Layout.maximumWidth: Math.min(implicitWidth, 480)
            }
            ApiServerIndicator {
                server: root.apiServer
                onSettingsRequested: root.apiServerSettingsRequested()
            }
            PerfOverlayButton {
                settings: root.settings
            }
            ModelMenu {
                Layout.maximumWidth: 240
                chat: root.chat
                inference: root.inference
                models: root.models
                onOpenFileRequested: root.openModelRequested()
                onManageModelsRequested: root.manageModelsRequested()
            }
        }
    }

    ColumnLayout {
        anchors.fill: parent
        spacing: 0
        // The conversation's own settings in a line (model, overrides, full-context policy).
        RowLayout {
            objectName: "conversationBar"
            Layout.fillWidth: true
            Layout.leftMargin: 16
            Layout.rightMargin: 8
            Label {
                objectName: "conversationSettingsLabel"
                text: root.chat.settingsSummary
                color: Material.hintTextColor
                font.pixelSize: 12
                elide: Text.ElideRight
                Layout.fillWidth: true
            }
            ToolButton {
                objectName: "conversationSettingsButton"
                text: qsTr("Conversation settings…")
                font.pixelSize: 12
                onClicked: conversationDialog.open()
            }
        }
        LoadProgress {
            Layout.fillWidth: true
            Layout.leftMargin: 12
            Layout.rightMargin: 8
            inference: root.inference
        }
        Banner {
            objectName: "errorBanner"
            Layout.fillWidth: true
            Layout.margins: visible ? 8 : 0
            text: root.chat.errorMessage
            details: root.chat.errorDetails
            error: true
            onDismissed: root.chat.dismissError()
        }
        Banner {
            objectName: "infoBanner"
            Layout.fillWidth: true
            Layout.margins: visible ? 8 : 0
            text: root.chat.infoMessage
            error: false
            onDismissed: root.chat.dismissInfo()
        }
        ChatView {
            id: chatView
            objectName: "chatView"
            Layout.fillWidth: true
            Layout.fillHeight: true
            // The performance overlay is docked at the right: the messages end before it.
            Layout.rightMargin: overlay.visible ? overlay.width + 2 * overlay.anchors.rightMargin : 0
            controller: root.chat
            fontSize: root.settings.fontSize
        }
        InputBar {
            Layout.fillWidth: true
            Layout.maximumWidth: 900
            Layout.alignment: Qt.AlignHCenter
            controller: root.chat
            ready: root.inference.modelLoaded && !root.inference.loading
        }
    }

    ConversationSettingsDialog {
        id: conversationDialog
        x: (root.width - width) / 2
        y: 40
        chat: root.chat
        settings: root.settings
    }

    // Docked at the right of the messages, below the banners; the toolbar button (Ctrl+Shift+P)
    // shows and hides it.
    PerfOverlay {
        id: overlay
        y: chatView.y + 12
        anchors.right: parent.right
        anchors.rightMargin: 12
        width: Math.min(300, root.width * 0.4)
        metrics: root.perf
        visible: !!root.perf && root.settings.perfOverlay
    }
}
